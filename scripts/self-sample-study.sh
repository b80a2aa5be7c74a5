#!/usr/bin/env bash
# Issue 30's sample-volume study on the default bundle: EAGLE drafters for the shipped target trained for the same
# number of steps on (a) rendered scenes (a tokenised shapes + emoji corpus, as the shipped drafter was trained),
# (b) 1,500 and (c) 5,000 of the target's own samples (train samples), then each one's teacher-forced fit on rendered
# held-out scenes (train fit) and its τ / acceptance in `bench` (counts, not times), beside the shipped drafter
# (3,000 steps on 20,000 scenes). Two drafters train at once, one thread each.
#   bash scripts/self-sample-study.sh SCENES_CORPUS HELD_OUT [STEPS]
# e.g. the issue-29 pilot data: runs/p29/corpus-a.safetensors runs/p29/held-out.safetensors (the shipped tokenizer's).
# BUNDLE (default: the shipped bundle) names the target; give a copy of it for a run that may outlive a switch of the
# shipped bundle, since an interrupted run resumes its drafters on BUNDLE's target.
set -euo pipefail
cd "$(dirname "$0")/.."
scenes=${1:?usage: self-sample-study.sh SCENES_CORPUS HELD_OUT [STEPS]}
held_out=${2:?usage: self-sample-study.sh SCENES_CORPUS HELD_OUT [STEPS]}
steps=${3:-600}
CLI=${CLI:-build/bin/speculum-cli}
RUNS=${RUNS:-runs/self-sample-study}
default=${BUNDLE:-resources/models/default}
export OMP_WAIT_POLICY=PASSIVE SPECULUM_DRAFT_SIZES=none
mkdir -p "$RUNS"

# The target's own images: the first 1,500 and 3,500 more (seeds continue), so (c) contains (b).
[ -f "$RUNS/self-1500.safetensors" ] || $CLI train samples --bundle $default --count 1500 --scene-seed 960000000 \
  --out "$RUNS/self-1500.safetensors" --threads 2
[ -f "$RUNS/self-3500.safetensors" ] || $CLI train samples --bundle $default --count 3500 --scene-seed 960001500 \
  --out "$RUNS/self-3500.safetensors" --threads 2

train() {  # NAME CORPUS...: an EAGLE drafter for a copy of the default bundle
  local name=$1; shift
  [ -f "$RUNS/$name.done" ] && return
  rm -rf "$RUNS/bundle-$name" && cp -r $default "$RUNS/bundle-$name"
  $CLI train drafter --bundle "$RUNS/bundle-$name" --objective eagle --corpus "$@" --out "$RUNS/drafter-$name" --steps "$steps" \
    --batch 16 --threads 1 --install > "$RUNS/drafter-$name.log"
  touch "$RUNS/$name.done"
}
train scenes "$scenes" & train self-1500 "$RUNS/self-1500.safetensors" & wait
train self-5000 "$RUNS/self-1500.safetensors" "$RUNS/self-3500.safetensors"

{
  echo "# EAGLE drafters for the default target: $steps steps of 16 on each corpus (1 thread), the shipped one 3,000 steps on 20,000 scenes"
  echo "# fit: train fit on the first 256 images of $held_out (rendered scenes, teacher-forced: acceptance = mean sum min(p, q), top-1)"
  echo "# bench: bench --methods ar,eagle --prompts builtin:16 --seeds 1 --threads 1 (tau, acceptance: counts)"
  printf "%-10s %-34s %12s %8s %8s %12s\n" drafter corpus fit-accept top-1 tau bench-accept
  for name in shipped scenes self-1500 self-5000; do
    bundle=$RUNS/bundle-$name corpus=$name
    [ $name = shipped ] && bundle=$default corpus="20,000 scenes (shipped)"
    [ $name = scenes ] && corpus="$(basename "$scenes")"
    [ $name = self-1500 ] && corpus="1,500 self-samples"
    [ $name = self-5000 ] && corpus="5,000 self-samples"
    fit=$($CLI train fit --bundle "$bundle" --drafter eagle --corpus "$held_out" --images 256 | tail -1)
    row=$($CLI bench --bundle "$bundle" --methods ar,eagle --prompts builtin:16 --seeds 1 --threads 1 2>/dev/null | grep '^| `eagle`')
    printf "%-10s %-34s %12s %8s %8s %12s\n" "$name" "$corpus" "$(echo "$fit" | sed -E 's/.*acceptance ([0-9.]+),.*/\1/')" \
      "$(echo "$fit" | sed -E 's/.*top-1 agreement ([0-9.]+).*/\1/')" "$(echo "$row" | cut -d'|' -f5 | tr -d ' ')" \
      "$(echo "$row" | cut -d'|' -f6 | sed -E 's/^ *([0-9.]+ %).*/\1/')"
  done
} | tee "$RUNS/table.txt"
