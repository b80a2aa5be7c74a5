#!/usr/bin/env bash
# Measures the speculative methods on the default bundle, as docs/benchmarks/studies.md reports them: speed
# against ar in one run (bench, 32 seeds), then quality of the lossy methods against ar on the same
# prompts and seeds (eval --csv + compare, the model card's tolerance protocol). Run on a quiet machine.
# PROMPTS=2000 is the protocol; fewer gives a quicker, wider-interval reading (docs/benchmarks/studies.md: 1000).
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=build/bin/speculum-cli
OUT=${OUT:-runs/bench}
PROMPTS=${PROMPTS:-2000}
SEEDS=${SEEDS:-32}
THREADS=${THREADS:-1}  # one thread beats two on this model (docs/benchmarks/studies.md)
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$OUT"
lscpu | grep -E "Model name|^CPU\(s\)" | tee "$OUT/machine.txt"
$CLI bench --forward-cost --threads "$THREADS" | tee "$OUT/forward-cost.txt"  # what one forward of n tokens costs
$CLI bench --methods ar,eagle,lantern,lisa,sjd,ssd,mulo --seeds "$SEEDS" --threads "$THREADS" --csv "$OUT/bench.csv" | tee "$OUT/bench.txt"
# The variants table (16 seeds each).
$CLI bench --methods eagle,lantern,lisa,sjd --seeds 16 --threads "$THREADS" --opt eagle.depth=5 --opt eagle.top_k=8 \
  --opt eagle.total_tokens=40 --opt lantern.lambda=2 --opt lantern.static_tree=1 --opt lisa.lisa_drafter=0 --opt lisa.soft=1 \
  --opt sjd.window=4 | tee "$OUT/ablation-1.txt"
$CLI bench --methods lisa,lantern --seeds 16 --threads "$THREADS" --opt lisa.soft=1 --opt lantern.delta=0.3 | tee "$OUT/ablation-2.txt"
$CLI bench --methods lisa --seeds 16 --threads "$THREADS" --opt lisa.depth=10 --opt lisa.top_k=1 --opt lisa.total_tokens=10 |
  tee "$OUT/ablation-3.txt"
# SSD's rounds and rows per block (docs/methods.md), 16 seeds each against ar in its own run.
for opts in "rounds=0" "rounds=1" "rounds=2" "rounds=4" "vertical=2" "rounds=2 early_stop=0" "vertical=2 schedule=1" \
  "vertical=2 schedule=1 staged_b=2 staged_i=2"; do
  args=()
  for o in $opts; do args+=(--opt "ssd.$o"); done
  $CLI bench --methods ssd --seeds 16 --threads "$THREADS" "${args[@]}" | tee "$OUT/ssd-${opts// /-}.txt"
done
# MuLo-SD's threshold, expansion and resampling order (docs/methods.md), 16 seeds each against ar in its own run.
for opts in "tau=0.05" "tau=0.2" "radius=0" "parallel=0" "neighbours=50" "rows_per_cycle=2"; do
  $CLI bench --methods mulo --seeds 16 --threads "$THREADS" --opt "mulo.$opts" | tee "$OUT/mulo-${opts}.txt"
done
for tau in 0.01 0.05 0; do
  [ -f "$OUT/eval-mulo-t$tau.csv" ] || $CLI eval --prompts "$PROMPTS" --method mulo --opt tau=$tau --threads "$THREADS" \
    --csv "$OUT/eval-mulo-t$tau.csv" | tee "$OUT/eval-mulo-t$tau.txt"
done
for method in ar lantern lisa; do
  [ -f "$OUT/eval-$method.csv" ] || $CLI eval --prompts "$PROMPTS" --method "$method" --threads "$THREADS" --csv "$OUT/eval-$method.csv" |
    tee "$OUT/eval-$method.txt"
done
for rounds in 0 1 2 4; do
  [ -f "$OUT/eval-ssd-r$rounds.csv" ] || $CLI eval --prompts "$PROMPTS" --method ssd --opt rounds=$rounds --threads "$THREADS" \
    --csv "$OUT/eval-ssd-r$rounds.csv" | tee "$OUT/eval-ssd-r$rounds.txt"
  $CLI compare "$OUT/eval-ar.csv" "$OUT/eval-ssd-r$rounds.csv" | tee "$OUT/compare-ssd-r$rounds.txt" || true
done
for tau in 0.01 0.05 0; do
  $CLI compare "$OUT/eval-ar.csv" "$OUT/eval-mulo-t$tau.csv" | tee "$OUT/compare-mulo-t$tau.txt" || true
done
[ -f "$OUT/eval-ssd-staged.csv" ] || $CLI eval --prompts "$PROMPTS" --method ssd --opt vertical=2 --opt schedule=1 \
  --threads "$THREADS" --csv "$OUT/eval-ssd-staged.csv" | tee "$OUT/eval-ssd-staged.txt"
$CLI compare "$OUT/eval-ar.csv" "$OUT/eval-ssd-staged.csv" | tee "$OUT/compare-ssd-staged.txt" || true
for method in lantern lisa; do
  $CLI compare "$OUT/eval-ar.csv" "$OUT/eval-$method.csv" | tee "$OUT/compare-$method.txt" || true  # exit 2: outside tolerance
done
