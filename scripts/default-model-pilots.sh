#!/usr/bin/env bash
# The default model's recipe study (issue 29): pilots of at most 45 minutes of 2-core training (here two pilots side
# by side, one core each, so that they meet the same machine), each evaluated on the model card's held-out prompts
# against the shipped model with `compare`'s paired intervals. Resumable: a pilot whose run folder has a checkpoint
# continues. Results: runs/p29/<pilot>.txt, <pilot>-compare.txt; the table is in docs/model-card.md.
#   bash scripts/default-model-pilots.sh data          # the pilots' corpus and held-out set (once)
#   bash scripts/default-model-pilots.sh PILOT...      # train the pilots side by side, then evaluate each
# Pilots (each continues the shipped target, resources/training/target-ctx, on 8,000 fresh scenes, seeds
# 20,000..27,999, plus the emoji training split; 1 thread, batch 16, peak LR 3e-4 after 50 warm-up steps, cosine over
# 800 steps, stopped by the clock after $MINUTES minutes):
#   fresh      the plain next-token loss
#   object4    each token's loss weighted by 1 + 4 x the share of its cell objects cover (--object-weight 4)
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=build/bin/speculum-cli
P=runs/p29
PROMPTS=${PROMPTS:-400}
MINUTES=${MINUTES:-40}
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$P"

if [ "${1:-}" = data ]; then
  [ -d "$P/vq" ] || cp -r resources/training/vq "$P/vq"
  [ -f "$P/emoji/captions.jsonl" ] || $CLI data emoji --out "$P/emoji"
  # Two halves side by side (the renderer runs on one core): the first with the emoji training split.
  [ -f "$P/corpus-a.safetensors" ] || OMP_NUM_THREADS=1 $CLI train tokenize --vq "$P/vq" --emoji "$P/emoji" --count 4000 \
    --seed 20000 --out "$P/corpus-a.safetensors" &
  [ -f "$P/corpus-b.safetensors" ] || OMP_NUM_THREADS=1 $CLI train tokenize --vq "$P/vq" --count 4000 --seed 24000 \
    --out "$P/corpus-b.safetensors" &
  wait
  [ -f "$P/held-out.safetensors" ] || $CLI train tokenize --vq "$P/vq" --emoji "$P/emoji" --emoji-held-out --count 512 \
    --seed 800000000 --out "$P/held-out.safetensors"
  exit 0
fi

weight_of() {
  case "$1" in
    fresh) echo 0 ;;
    object4) echo 4 ;;
    *) echo "unknown pilot '$1' (fresh, object4)" >&2; exit 2 ;;
  esac
}
for pilot in "$@"; do weight_of "$pilot" > /dev/null; done
for pilot in "$@"; do
  # timeout sends SIGINT: the trainer checkpoints and exits; rerunning resumes.
  timeout -s INT "${MINUTES}m" $CLI train target --vq "$P/vq" --corpus "$P/corpus-a.safetensors" "$P/corpus-b.safetensors" \
    --held-out "$P/held-out.safetensors" --out "$P/$pilot" --init-from resources/training/target-ctx --batch 16 \
    --steps 800 --warmup 50 --lr 3e-4 --checkpoint-every 50 --threads 1 --object-weight "$(weight_of "$pilot")" \
    > "$P/$pilot-train.log" 2>&1 &
done
wait
# The shipped model's verdicts on the same prompts, once (eval is deterministic for its seeds).
[ -f "$P/shipped.csv" ] || $CLI eval --prompts "$PROMPTS" --csv "$P/shipped.csv" > "$P/shipped.txt"
for pilot in "$@"; do
  $CLI train bundle --vq "$P/vq" --target "$P/$pilot" --out "$P/$pilot-bundle" --cfg 1.5 > /dev/null
  $CLI eval --bundle "$P/$pilot-bundle" --prompts "$PROMPTS" --csv "$P/$pilot.csv" > "$P/$pilot.txt"
  $CLI compare "$P/shipped.csv" "$P/$pilot.csv" > "$P/$pilot-compare.txt" || [ $? -eq 2 ]  # 2: outside the tolerance
  echo "== $pilot"; cat "$P/$pilot-compare.txt"
done
