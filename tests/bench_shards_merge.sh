#!/usr/bin/env bash
# bench --shard i/3 for i = 0, 1, 2, merged, must equal one unsharded bench in everything but the times:
# every image's counts (JSON without the time fields) and the table's count and verdict columns (CSV columns 1-14).
set -euo pipefail
cli=$1 bundle=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run=(bench --bundle "$bundle" --methods ar,sjd,eagle --prompts builtin:3 --seeds 2 --warmup 0 --threads 1)
"$cli" "${run[@]}" --json "$dir/full.json" --csv "$dir/full.csv" >/dev/null 2>&1
for i in 0 1 2; do "$cli" "${run[@]}" --shard $i/3 --json "$dir/part$i.json" >/dev/null 2>&1; done
"$cli" merge "$dir/part2.json" "$dir/part0.json" "$dir/part1.json" --json "$dir/merged.json" --csv "$dir/merged.csv" >/dev/null
untimed() { grep -vE '"(wall_ms|forward_ms|draft_ms)"' "$1"; }
diff <(untimed "$dir/full.json") <(untimed "$dir/merged.json")
diff <(cut -d, -f1-16 "$dir/full.csv") <(cut -d, -f1-16 "$dir/merged.csv")
grep -q '"drafted": [1-9]' "$dir/merged.json"  # the comparison covers real draft counts
# Incomplete or repeated shards are refused, and nothing is written.
if "$cli" merge "$dir/part0.json" "$dir/part1.json" --json "$dir/bad.json" 2>"$dir/err"; then exit 1; fi
grep -q "2 of 3 shards given" "$dir/err" && [ ! -e "$dir/bad.json" ]
if "$cli" merge "$dir/part0.json" "$dir/part0.json" "$dir/part1.json" 2>"$dir/err"; then exit 1; fi
grep -q "shard 0 is given twice" "$dir/err"
# Resuming a finished run measures nothing new and reports the same counts.
"$cli" "${run[@]}" --json "$dir/full.json" --csv "$dir/resumed.csv" --resume 2>"$dir/err" >/dev/null
grep -q "resuming with 6 finished prompt x seed pair" "$dir/err"
diff <(cut -d, -f1-16 "$dir/full.csv") <(cut -d, -f1-16 "$dir/resumed.csv")
echo "3 shards merged equal the unsharded run; a resumed run keeps its images"
