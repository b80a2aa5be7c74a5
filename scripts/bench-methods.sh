#!/usr/bin/env bash
# Measures the speculative methods on the default bundle, as docs/benchmarks.md reports them: speed
# against ar in one run (bench, 32 seeds), then quality of the lossy methods against ar on the same
# prompts and seeds (eval --csv + compare, the model card's tolerance protocol). Run on a quiet machine.
# PROMPTS=2000 is the protocol; fewer gives a quicker, wider-interval reading.
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=build/bin/speculum-cli
OUT=${OUT:-runs/bench}
PROMPTS=${PROMPTS:-2000}
SEEDS=${SEEDS:-32}
THREADS=${THREADS:-2}
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$OUT"
lscpu | grep -E "Model name|^CPU\(s\)" | tee "$OUT/machine.txt"
$CLI bench --methods ar,eagle,lantern,lisa,sjd --seeds "$SEEDS" --threads "$THREADS" --csv "$OUT/bench.csv" | tee "$OUT/bench.txt"
for method in ar lantern lisa; do
  [ -f "$OUT/eval-$method.csv" ] || $CLI eval --prompts "$PROMPTS" --method "$method" --threads "$THREADS" --csv "$OUT/eval-$method.csv" |
    tee "$OUT/eval-$method.txt"
done
for method in lantern lisa; do
  $CLI compare "$OUT/eval-ar.csv" "$OUT/eval-$method.csv" | tee "$OUT/compare-$method.txt" || true  # exit 2: outside tolerance
done
