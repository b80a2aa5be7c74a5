#!/usr/bin/env bash
# LlamaGen T2I at its real sizes on this machine, with random weights of the real shapes (a measuring aid, not a
# test): a flan-t5-xl-shaped encoder (bf16 on disk, as LlamaGen runs it) and GPT-XL T2I bundles at 256 px (16x16)
# and 512 px (32x32). For 1 and 2 threads: load time, the encoder's time per prompt, the 1-token forward after half
# the grid (= ar's ms/token there) and 8-64-token forwards, peak resident memory. Run it on a quiet machine.
#   bash scripts/t2i-speed.sh [WORK_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/speculum-t2i-speed}
repeats=${2:-10}
cli=build/bin/speculum-cli
mkdir -p "$work"
[ -f "$work/flan-t5-xl/model.safetensors" ] ||
  $cli init-random-t5 --preset flan-t5-xl --bf16 --spiece tests/fixtures/llamagen-t2i/t5_tiny/spiece.model --out "$work/flan-t5-xl"
for grid in 16 32; do
  [ -f "$work/xl-$grid/speculum.json" ] ||
    $cli init-random --preset llamagen-xl --condition t5 --t5 "$work/flan-t5-xl" --grid $grid --no-drafters --out "$work/xl-$grid"
done
echo "| model | threads | load s | T5 ms/prompt | 1-token forward ms | 8 | 16 | 32 | 64 | peak RSS GiB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for grid in 16 32; do
  for threads in 1 2; do
    out="$work/xl-$grid-t$threads.txt"
    /usr/bin/time -v $cli bench --bundle "$work/xl-$grid" --forward-cost --repeats "$repeats" --threads $threads > "$out" 2>&1
    load=$(grep -o "bundle loaded in [0-9.]* s" "$out" | grep -o "[0-9.]* s" | tr -d ' s')
    t5=$(grep -o "T5 encoder: [0-9.]*" "$out" | grep -o "[0-9.]*$")
    ms() { awk -v n="$1" '$1 == n && NF == 4 { print $2 }' "$out"; }
    rss=$(awk '/Maximum resident set size/ { printf "%.1f", $NF / 1048576 }' "$out")
    echo "| XL T2I $((grid * 16)) px (${grid}x$grid) | $threads | $load | $t5 | $(ms 1) | $(ms 8) | $(ms 16) | $(ms 32) | $(ms 64) | $rss |"
  done
done
