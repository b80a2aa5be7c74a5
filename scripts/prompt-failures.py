#!/usr/bin/env python3
"""What the prompts of an `speculum-cli eval --csv` run fail on (docs/model-card.md).
single:   outcome shares of the single-object prompts, and a confusion table of the named shape against the shape
          drawn in the named colour.
relation: outcome shares of the relation prompts, and which of the two named colours (shapes) the drawing holds
          where they differ: both, or only one — the second object drawn as a copy of the first; how often each named
          object is drawn once, not at all or more than once, and, where both are drawn once, how often the
          arrangement is right (a coin flip is 50 %). Given a second run of the same prompts, how its share drawing
          both differs, paired by prompt with a 95 % interval.
Usage: python3 scripts/prompt-failures.py single RUN.csv
       python3 scripts/prompt-failures.py relation RUN.csv [OTHER_RUN.csv]"""
import collections
import csv
import math
import re
import sys

SHAPES = ["circle", "square", "triangle", "star"]
DRAWN = SHAPES + ["nothing", "other colour"]
OBJECT = r"(?:small |large )?(\w+) (circle|square|triangle|star)"


def drawn_objects(row):
    """(colour, shape) of every object the checker found, or None where no claim listed them (every named object was
    present). An object claim's failure lists them all: "... is present (0 found: red square at (3, 4); ...)"."""
    found = re.search(r"is present \(\d+ found: ((?:[^)]*\))(?:; [^)]*\))*|no objects)\)", row["failed_claims"])
    return re.findall(r"(\w+) (circle|square|triangle|star) at", found.group(1)) if found else None


def print_shares(counter, total):
    for outcome, n in counter.most_common():
        print(f"{outcome:62s} {n:5d} {100 * n / total:5.1f} %")


def single(rows):
    outcomes, confusion = collections.Counter(), collections.defaultdict(collections.Counter)
    for row in rows:
        colour, shape = re.search(r"(\w+) (circle|square|triangle|star) on", row["caption"]).groups()
        missing = "is present (0 found" in row["failed_claims"]
        found = drawn_objects(row)
        if row["passed"] == "1" or not missing:
            outcomes["passed" if row["passed"] == "1" else "the named object, but another claim failed"] += 1
            confusion[shape][shape] += 1
            continue
        same_colour = [s for c, s in found if c == colour]
        if not found:
            outcomes["an empty canvas"] += 1
            confusion[shape]["nothing"] += 1
        elif same_colour:
            outcomes["an object of the named colour, but the wrong shape"] += 1
            confusion[shape][same_colour[0]] += 1
        else:
            outcomes["no object of the named colour"] += 1
            confusion[shape]["other colour"] += 1
    print_shares(outcomes, sum(outcomes.values()))
    print("named \\ drawn".ljust(14) + "".join(f"{d:>14s}" for d in DRAWN))
    for shape in SHAPES:
        print(shape.ljust(14) + "".join(f"{confusion[shape][d]:14d}" for d in DRAWN))


def named_pair(row):
    """(colour_a, shape_a, side, colour_b, shape_b) of a relation prompt."""
    return re.search(OBJECT + r" (left of|right of|above|below) an? " + OBJECT, row["caption"]).groups()


def named_drawn(row, index):
    """The two named colours (index 0) or shapes (1) and which of them the drawing holds; None where they are alike."""
    pair = named_pair(row)
    a, b = pair[index], pair[3 + index]
    if a == b:
        return None
    found = drawn_objects(row)
    return a, b, {a, b} if found is None else {o[index] for o in found} & {a, b}


def holds_both(row, index):
    """Whether the drawing holds both named colours (index 0) or shapes (1); None where the two are the same."""
    named = named_drawn(row, index)
    return None if named is None else len(named[2]) == 2


def relation(rows, other_rows=None):
    outcomes, leaks = collections.Counter(), {"colour": collections.Counter(), "shape": collections.Counter()}
    named_objects, both_once, placed_right = collections.Counter(), 0, 0
    for row in rows:
        side = named_pair(row)[2]
        failed = row["failed_claims"]
        # A named object's presence claim fails with how many of it were found: 0 (missing) or 2 and more.
        found_counts = [int(n) for n in re.findall(r"is present \((\d+) found", failed)]
        named_objects["drawn once"] += 2 - len(found_counts)
        for n in found_counts:
            named_objects["not drawn" if n == 0 else "drawn more than once"] += 1
        arranged_wrong = re.search(r"is (left of|right of|above|below) the", failed)
        if not found_counts:
            both_once += 1
            placed_right += not arranged_wrong
        missing = found_counts.count(0)
        if row["passed"] == "1":
            outcomes["passed"] += 1
        elif missing:
            outcomes[f"{'one' if missing == 1 else 'both'} of the named objects missing"] += 1
        elif "(an object is missing)" not in failed and arranged_wrong:
            outcomes["both named objects, the arrangement wrong"] += 1
        else:
            outcomes["both named objects, another claim failed (an extra object)"] += 1
        # In raster order the upper object is drawn first; left/right pairs start on about the same row.
        upper = {"above": "a", "below": "b"}.get(side)
        for kind, index in (("colour", 0), ("shape", 1)):
            named = named_drawn(row, index)
            if named is None:
                continue
            a, b, held = named
            if held == {a, b}:
                leaks[kind]["both named"] += 1
            elif not held:
                leaks[kind]["neither"] += 1
            elif upper is None:
                leaks[kind]["one only (left/right: either is drawn first)"] += 1
            else:
                first = a if upper == "a" else b
                leaks[kind]["one only: the upper object's (drawn first)" if held == {first}
                            else "one only: the lower object's"] += 1
    print_shares(outcomes, sum(outcomes.values()))
    print(f"\nthe {2 * len(rows)} named objects (in the named colour and shape)")
    print_shares(named_objects, 2 * len(rows))
    print(f"both drawn once: {both_once} prompts; of them, the arrangement right: {placed_right} "
          f"({100 * placed_right / max(both_once, 1):.1f} %)")
    for kind, counter in leaks.items():
        print(f"\nprompts naming two different {kind}s: {sum(counter.values())}; the {kind}s drawn")
        print_shares(counter, sum(counter.values()))
    if other_rows is None:
        return
    other = {row["prompt"]: row for row in other_rows}
    print("\nthe second run against this one, paired by prompt (difference in points, 95 % interval)")
    for index, kind in ((0, "colours"), (1, "shapes")):
        pairs = [(holds_both(row, index), holds_both(other[row["prompt"]], index)) for row in rows]
        pairs = [p for p in pairs if p[0] is not None]
        n = len(pairs)
        gained, lost = sum(b and not a for a, b in pairs), sum(a and not b for a, b in pairs)
        diff, half = (gained - lost) / n, 1.96 * math.sqrt(gained + lost - (gained - lost) ** 2 / n) / n
        print(f"both named {kind}: {sum(a for a, _ in pairs)} -> {sum(b for _, b in pairs)} of {n}: "
              f"{100 * diff:+.1f} [{100 * (diff - half):+.1f}, {100 * (diff + half):+.1f}]")


def rows_of(family, path):
    with open(path, newline="") as f:
        rows = [row for row in csv.DictReader(f) if row["family"] == family]
    if not rows:
        sys.exit(f"{path}: no {family} prompts")
    return rows


if __name__ == "__main__":
    if not (len(sys.argv) == 3 and sys.argv[1] == "single" or 3 <= len(sys.argv) <= 4 and sys.argv[1] == "relation"):
        sys.exit(__doc__)
    if sys.argv[1] == "single":
        single(rows_of("single", sys.argv[2]))
    else:
        relation(rows_of("relation", sys.argv[2]), rows_of("relation", sys.argv[3]) if len(sys.argv) == 4 else None)
