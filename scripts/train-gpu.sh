#!/usr/bin/env bash
# What the project trains when a GPU machine is lent for a few minutes (docs/model-card.md, docs/methods.md),
# with the engine-only CLI built there (scripts/cuda-check.sh builds it). Everything stops by DEADLINE
# (seconds since the epoch; trainers get SIGTERM, checkpoint and return), so the results can be carried back.
#  1. Drafters for the shipped target, same recipe as the shipped eagle drafter (3,000 steps of 16): teacher-forced
#     on the shapes corpus, on the target's own samples (drawn meanwhile on the CPU cores), and on both.
#  2. The target continued on the first corpus plus fresh scenes (TARGET_CORPORA), from the shipped weights, and a
#     wider target from scratch on the same data, each with a cosine schedule sized to the time left.
# Usage: DATA=dir-with-corpora DEADLINE=... bash scripts/train-gpu.sh OUT
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/gpu}
CLI=${CLI:-build-cuda/bin/speculum-cli}
DATA=${DATA:-runs}
DEADLINE=${DEADLINE:-$(($(date +%s) + 420))}
SAMPLERS=${SAMPLERS:-10}
DEVICE=${DEVICE:-cuda}
BUNDLE=resources/models/default
HELD_OUT=$DATA/held-out.safetensors
read -r -a TARGET_CORPORA <<<"${TARGET_CORPORA:-$DATA/corpus.safetensors $DATA/fresh.safetensors}"
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$OUT"
left() { echo $((DEADLINE - $(date +%s))); }

# The target's own samples at the bundle's sampling, on the CPU cores while the GPU trains (scene seeds
# 960,000,000 + 100,000·i: disjoint from training, validation and evaluation scenes).
sample_until=$(($(date +%s) + ${SAMPLE_SECONDS:-150}))
for i in $(seq 0 $((SAMPLERS - 1))); do
  timeout -s INT $((sample_until - $(date +%s))) $CLI train samples --bundle $BUNDLE --device cpu --threads 1 --count 100000 \
    --scene-seed $((960000000 + 100000 * i)) --out "$OUT/self-$i.safetensors" >"$OUT/self-$i.log" 2>&1 &
done

# Two targets: a 30-step probe of each (run together, as the real runs will be) measures seconds per step.
target_common=(--vq "$DATA/vq" --corpus "${TARGET_CORPORA[@]}" --held-out "$HELD_OUT" --device "$DEVICE" --threads 1 --batch ${TARGET_BATCH:-64})
mkdir -p "$OUT/init/checkpoint"
cp $BUNDLE/speculum.json "$OUT/init/" && cp $BUNDLE/target.safetensors "$OUT/init/checkpoint/ema.safetensors"
target_options() {  # the two recipes
  case $1 in
    continued) echo --init-from "$OUT/init" --lr 5e-4 --warmup 100 ;;
    wider) echo --dim 256 --layers 8 --heads 8 --lr 1e-3 --warmup 300 ;;
  esac
}
probes=()
for run in continued wider; do
  # shellcheck disable=SC2046
  timeout -s TERM 90 $CLI train target "${target_common[@]}" $(target_options $run) --out "$OUT/probe-$run" --steps 100000 --stop-at 30 \
    --checkpoint-every 1000 >"$OUT/probe-$run.log" 2>&1 &
  probes+=($!)
done
wait "${probes[@]}"
for run in continued wider; do
  # Steps 10 to 20: past start-up, before the held-out loss of the last step.
  sps=$(awk -F, '$1 == 10 { a = $2 } $1 == 20 { b = $2 } END { print (b > a ? (b - a) / 10 : 0.1) }' "$OUT/probe-$run/log.csv")
  [ "$(left)" -gt 60 ] || break
  steps=$(awk -v t="$(($(left) - 30))" -v s="$sps" 'BEGIN { n = int(t / (s * 1.2)); print (n < 50 ? 50 : n) }')
  echo "target $run: $sps s/step in the probe -> $steps steps" | tee -a "$OUT/plan.txt"
  # shellcheck disable=SC2046
  timeout -s TERM $(($(left) - 10)) $CLI train target "${target_common[@]}" $(target_options $run) --out "$OUT/target-$run" \
    --steps "$steps" --checkpoint-every 500 >"$OUT/target-$run.log" 2>&1 &
done

# Drafters once the samples are in: teacher-forced (the shipped recipe), self-distilled, both.
while [ "$(date +%s)" -lt "$sample_until" ]; do sleep 2; done
sleep 5
self=()
for f in "$OUT"/self-*.safetensors; do [ -f "$f" ] && self+=("$f"); done
echo "self samples: ${#self[@]} files, $(grep -h "^wrote" "$OUT"/self-*.log | awk '{s += substr($3, 2)} END {print s}') images" |
  tee -a "$OUT/plan.txt"
held_self=${self[-1]}  # the last sampler's images stay out of training: acceptance on the target's own images
train_self=("${self[@]:0:${#self[@]}-1}")
drafter_common=(--bundle $BUNDLE --objective eagle --held-out "$HELD_OUT" --device "$DEVICE" --threads 1 --steps ${DRAFTER_STEPS:-3000})
for variant in corpus self both; do
  case $variant in
    corpus) corpora=("$DATA/corpus.safetensors") ;;
    self) corpora=("${train_self[@]}") ;;
    both) corpora=("$DATA/corpus.safetensors" "${train_self[@]}") ;;
  esac
  [ "$(left)" -gt 40 ] || break
  timeout -s TERM $(($(left) - 15)) $CLI train drafter "${drafter_common[@]}" --corpus "${corpora[@]}" \
    --out "$OUT/drafter-$variant" >"$OUT/drafter-$variant.log" 2>&1
done
# Fit (teacher-forced acceptance, top-1) of each drafter and the shipped one on held-out scenes and held-out self samples.
fit() { $CLI train fit --bundle "$1" --drafter eagle --corpus "$2" --images 128 2>&1 | tail -1; }
for corpus in "$HELD_OUT" "$held_self"; do
  echo "shipped on $(basename "$corpus"): $(fit $BUNDLE "$corpus")"
  for variant in corpus self both; do
    [ -f "$OUT/drafter-$variant/drafter.safetensors" ] || continue
    mkdir -p "$OUT/fit-$variant" && cp $BUNDLE/* "$OUT/fit-$variant/"
    cp "$OUT/drafter-$variant/drafter.safetensors" "$OUT/fit-$variant/drafter-eagle.safetensors"
    echo "$variant on $(basename "$corpus"): $(fit "$OUT/fit-$variant" "$corpus")"
  done
done | tee -a "$OUT/plan.txt"
wait
