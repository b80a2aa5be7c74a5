#!/usr/bin/env python3
"""What the single-object prompts of an `speculum-cli eval --csv` run fail on (docs/model-card.md):
outcome shares, and a confusion table of the named shape against the shape drawn in the named colour.
Usage: python3 scripts/single-object-failures.py RUN.csv"""
import collections
import csv
import re
import sys

SHAPES = ["circle", "square", "triangle", "star"]
DRAWN = SHAPES + ["nothing", "other colour"]


def main(path):
    outcomes, confusion = collections.Counter(), collections.defaultdict(collections.Counter)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["family"] != "single":
                continue
            colour, shape = re.search(r"(\w+) (circle|square|triangle|star) on", row["caption"]).groups()
            # The object claim's failure lists what was found: "... is present (0 found: red square at (3, 4); ...)".
            missing = re.search(r"is present \(0 found: ((?:[^)]*\))(?:; [^)]*\))*|no objects)\)", row["failed_claims"])
            if row["passed"] == "1" or not missing:
                outcomes["passed" if row["passed"] == "1" else "the named object, but another claim failed"] += 1
                confusion[shape][shape] += 1
                continue
            found = re.findall(r"(\w+) (circle|square|triangle|star) at", missing.group(1))
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
    total = sum(outcomes.values())
    if not total:
        sys.exit(f"{path}: no single-object prompts")
    for outcome, n in outcomes.most_common():
        print(f"{outcome:55s} {n:5d} {100 * n / total:5.1f} %")
    print("named \\ drawn".ljust(14) + "".join(f"{d:>14s}" for d in DRAWN))
    for shape in SHAPES:
        print(shape.ljust(14) + "".join(f"{confusion[shape][d]:14d}" for d in DRAWN))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
