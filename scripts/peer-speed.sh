#!/usr/bin/env bash
# Speculum beside the official LlamaGen code and the memory-bandwidth roofline, in one run on this machine.
#
#   scripts/peer-speed.sh LLAMAGEN_CHECKOUT [SIZE]     SIZE: b (default), l or xl
#
# Builds random weights of the official GPT-<SIZE> class-conditional shapes (256 px, ds16 VQ), writes them as the
# torch.save checkpoint LlamaGen's training writes, converts that with `speculum-cli convert llamagen`, then
# alternates, per thread count (1, 2): the official generate() under Debian's python3-torch (scripts/peer_generate.py,
# run with the checkout's own code) and `speculum-cli bench --methods ar,sjd` with f32, bf16 and q8 weights, same
# sampling (CFG 4, top-k 2000). Beside each: Speculum's 1-token target forward and the roofline, the weight bytes
# one decode step reads divided by the read bandwidth measured in the same run (`bench --forward-cost` prints
# both). ms/token is the whole image over 256 (Speculum's includes its VQ decode, the official's does not).
# Run it on a quiet machine.
set -euo pipefail
checkout=$(realpath "${1:?usage: peer-speed.sh LLAMAGEN_CHECKOUT [b|l|xl]}")
size=${2:-b}
[ -f "$checkout/autoregressive/models/gpt.py" ] || { echo "$checkout is not a LlamaGen checkout (no autoregressive/models/gpt.py)" >&2; exit 2; }
cd "$(dirname "$0")/.."
cli=$(realpath "${CLI:-build/bin/speculum-cli}")
work=${WORK:-runs/peer-speed}
repeats=${REPEATS:-2}
py=/usr/bin/python3
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$work"
random=$work/random-$size
[ -f "$random/speculum.json" ] || $cli init-random --out "$random" --preset llamagen-$size --condition class --no-drafters
gpt=$work/c2i_${size^^}_256.pt
[ -f "$gpt" ] || $py scripts/safetensors_to_pt.py "$random/target.safetensors" "$gpt"
[ -f "$work/vq_ds16_c2i.pt" ] || $py scripts/safetensors_to_pt.py "$random/vq.safetensors" "$work/vq_ds16_c2i.pt" --codebook-used
bundle=$work/converted-$size
[ -f "$bundle/speculum.json" ] || $cli convert llamagen --gpt "$gpt" --vq "$work/vq_ds16_c2i.pt" --out "$bundle"

results=$work/results-$size.txt
: > "$results"
for threads in 1 2; do
  for format in f32 bf16 q8; do  # the roofline: decode-step bytes over bandwidth, per format
    $cli bench --forward-cost --repeats 5 --threads $threads --weights $format --bundle "$bundle" |
      awk -v t=$threads -v f=$format '/roofline/ {print "roofline", t, f, $NF} $1 == 1 {print "step", t, f, $2}
        /alternating/ {print "ratio", t, f, $(NF - 3) + 0}' >> "$results"
  done
  for r in $(seq "$repeats"); do  # alternate the two programs
    $py scripts/peer_generate.py "$checkout" "$gpt" "$size" $threads 1 4.0 2000 >> "$results"
    for format in f32 bf16 q8; do
      $cli bench --bundle "$bundle" --methods ar,sjd --seeds 1 --warmup 0 --threads $threads --weights $format \
        --cfg 4 --top-k 2000 --class 207 2>/dev/null |  # the Markdown rows: ms / image (median) over 256 tokens
        awk -F'|' -v t=$threads -v f=$format '$2 ~ /`(ar|sjd)`/ {gsub(/[ `]/, "", $2); split($8, ms, " "); print $2, t, f, ms[1] / 256}' >> "$results"
    done
  done
done

echo "GPT-${size^^} (random weights of the official shapes), 256 tokens, CFG 4, top-k 2000; $(nproc) cores; median ms per token"
awk -f scripts/median.awk -f /dev/fd/3 "$results" 3<<'AWK'
  $1 == "official" { official[$2] = official[$2] " " $3 }
  $1 == "roofline" { roof[$2, $3] = $4 }
  $1 == "step" { step[$2, $3] = $4 }
  $1 == "ratio" { ratio[$2, $3] = $4 }  # step / roofline, the two timed alternately
  $1 == "ar" || $1 == "sjd" { run[$1, $2, $3] = run[$1, $2, $3] " " $4 }
  END {
    printf "%-8s %-22s %10s %12s %14s %12s %14s\n", "threads", "program", "ms/token", "vs official", "1-token fwd", "roofline ms", "fwd/roofline"
    for (t = 1; t <= 2; ++t) {
      o = median(official[t])
      printf "%-8d %-22s %10.2f %12s %14s %12s %14s\n", t, "official generate()", o, "1.00x", "", "", ""
      split("f32 bf16 q8", formats, " ")
      for (i = 1; i <= 3; ++i) for (m = 1; m <= 2; ++m) {
        method = m == 1 ? "ar" : "sjd"; f = formats[i]
        if (!((method, t, f) in run)) continue
        v = median(run[method, t, f])
        printf "%-8d %-22s %10.2f %11.2fx %14.2f %12.2f %13.2fx\n", t, "speculum " method " " f, v, o / v, step[t, f], roof[t, f],
               ratio[t, f]
      }
    }
  }
AWK
