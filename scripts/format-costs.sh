#!/usr/bin/env bash
# What each weight format costs on one bundle: ms per token of an `ar` image, the 1-token forward beside its
# roofline (reading the decode step's weight bytes once, measured in the same run; fwd/roofline is the median ratio
# of the two timed alternately, so the machine's drift cancels), and peak resident
# memory while generating. For LlamaGen's sizes make a bundle of random weights of the real shapes first
# (`speculum-cli init-random --preset llamagen-xl --condition class --no-drafters --out DIR`). Run it on a quiet
# machine.
#
#   scripts/format-costs.sh BUNDLE [THREADS]
set -euo pipefail
bundle=${1:?usage: format-costs.sh BUNDLE [THREADS]}
threads=${2:-2}
cli=${CLI:-build/bin/speculum-cli}
export OMP_WAIT_POLICY=PASSIVE
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf "%-6s %14s %14s %14s %14s %16s\n" format "ar ms/token" "1-token fwd" "roofline ms" "fwd/roofline" "peak RSS GiB"
for format in f32 f16 bf16 q8; do
  cost=$($cli bench --forward-cost --repeats 5 --threads "$threads" --weights $format --bundle "$bundle" |
    awk '$1 == 1 {step = $2} /roofline/ {roof = $NF} /alternating/ {ratio = $(NF - 3) + 0} END {print step, roof, ratio}')
  /usr/bin/time -o "$tmp/peak" -f "%M" $cli bench --bundle "$bundle" --methods ar --seeds 1 --warmup 0 --threads "$threads" \
    --weights $format > "$tmp/bench" 2>/dev/null
  run=$(awk -F'|' '$2 ~ /`ar`/ {split($8, ms, " "); print ms[1] / ($4 + 0)}' "$tmp/bench")  # ms / image over NFE
  peak=$(awk '{print $1 / 1048576}' "$tmp/peak")
  read -r step roof ratio <<< "$cost"
  awk -v f=$format -v t="$run" -v s="$step" -v r="$roof" -v q="$ratio" -v p="$peak" \
    'BEGIN {printf "%-6s %14.1f %14.1f %14.1f %13.2fx %16.2f\n", f, t, s, r, q, p}'
done
