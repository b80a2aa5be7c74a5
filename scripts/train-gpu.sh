#!/usr/bin/env bash
# Issue 29's targets on a GPU lent for a few minutes (docs/model-card.md), with the engine-only CLI built there
# (scripts/build-cuda.sh). The runs train side by side on the one GPU and share the time to DEADLINE (seconds since
# the epoch): a 20-step probe of all of them together measures seconds per step, then each run's cosine schedule is
# sized to the time left. (On an H200, three runs took 0.35 s per step of 128 each; why so long is not profiled yet.)
# Trainers get SIGTERM at the deadline, checkpoint and return.
#   scratch    the shipped architecture from nothing, the caption contrast on the objects' tops (0.1) from step 0:
#              the scratch-contrast pilot (scripts/default-model-pilots.sh) at batch 128, peak LR 1.5e-3
#   continued  a trained target continued with the same contrast (stage 4 of scripts/train-default.sh) at batch
#              128, LR 4e-4, from INIT, a bundle or a run folder (default: the shipped bundle's f16 weights;
#              scripts/gpu-session.sh passes the last GPU run's end, resources/training/target-gpu, as
#              scripts/gpu-session-prepare.sh packs it)
#   deeper     as scratch with 8 blocks (1.33x the shipped target's work per token)
# DATA holds vq/tokenizer.json, held-out.safetensors and the training corpora corpus-*.safetensors
# (scripts/default-model-pilots.sh data makes them). RUNS picks the runs (default: all three).
# Usage: DATA=dir DEADLINE=... bash scripts/train-gpu.sh OUT
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/gpu}
CLI=${CLI:-build-cuda/bin/speculum-cli}
DATA=${DATA:-runs/p29}
DEADLINE=${DEADLINE:-$(($(date +%s) + 420))}
DEVICE=${DEVICE:-cuda}
BATCH=${BATCH:-128}
THREADS=${THREADS:-4}  # per run: the CPU side of each step (batches, foils, the optimizer's bookkeeping)
read -r -a RUNS <<<"${RUNS:-scratch continued deeper}"
INIT=${INIT:-resources/models/default}
export OMP_WAIT_POLICY=PASSIVE
# TF32 allowed in the GPU's matrix products (ATen's override of its FP32 default): a 10-bit mantissa in the products,
# f32 sums — enough for training, and what mixed-precision training of such models uses.
export TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1
mkdir -p "$OUT"
left() { echo $((DEADLINE - $(date +%s))); }

common=(--vq "$DATA/vq" --corpus "$DATA"/corpus-*.safetensors --held-out "$DATA/held-out.safetensors" --device "$DEVICE"
        --threads "$THREADS" --batch "$BATCH" --caption-contrast 0.1 --contrast-on object-tops)
options_of() {
  case $1 in
    scratch) echo --lr 1.5e-3 --warmup 200 ;;
    continued) echo --init-from "$INIT" --lr 4e-4 --warmup 100 ;;
    deeper) echo --layers 8 --lr 1.5e-3 --warmup 200 ;;
    *) echo "unknown run '$1' (scratch, continued, deeper)" >&2; return 2 ;;
  esac
}
for run in "${RUNS[@]}"; do options_of "$run" >/dev/null || exit 2; done

probes=()
for run in "${RUNS[@]}"; do
  rm -rf "$OUT/probe-$run"
  # shellcheck disable=SC2046  # the options split on purpose
  timeout -s TERM 120 $CLI train target "${common[@]}" $(options_of "$run") --out "$OUT/probe-$run" --steps 100000 \
    --stop-at 30 --checkpoint-every 1000 >"$OUT/probe-$run.log" 2>&1 &
  probes+=($!)
done
wait "${probes[@]}"
for run in "${RUNS[@]}"; do
  # Steps 10 to 30: past start-up; the last row also times the held-out loss, as the run's checkpoints will.
  sps=$(awk -F, '$1 == 10 { a = $2 } $1 == 30 { b = $2 } END { print (b > a ? (b - a) / 20 : 0) }' "$OUT/probe-$run/log.csv" 2>/dev/null)
  if [ -z "$sps" ] || [ "$sps" = 0 ]; then
    echo "target $run: the probe failed ($OUT/probe-$run.log):"; tail -5 "$OUT/probe-$run.log"; continue
  fi
  [ "$(left)" -gt 60 ] || { echo "target $run: too little time left after the probe"; continue; }
  steps=$(awk -v t="$(($(left) - 25))" -v s="$sps" 'BEGIN { n = int(t / (s * 1.1)); print (n < 50 ? 50 : n) }')
  echo "target $run: $sps s/step in the probe (all runs together) -> $steps steps of $BATCH" | tee -a "$OUT/plan.txt"
  # shellcheck disable=SC2046
  timeout -s TERM $(($(left) - 8)) $CLI train target "${common[@]}" $(options_of "$run") --out "$OUT/$run" \
    --steps "$steps" --checkpoint-every 500 >"$OUT/$run.log" 2>&1 &
done
wait
for run in "${RUNS[@]}"; do
  [ -f "$OUT/$run/log.csv" ] && echo "target $run: $(tail -1 "$OUT/$run/log.csv")  (step,seconds,loss,lr,grad_norm,held_out,...)"
done | tee -a "$OUT/plan.txt"
