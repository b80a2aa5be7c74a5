#!/usr/bin/env bash
# Every trained part the speculative methods need, for any bundle — class-conditioned (a converted LlamaGen C2I
# bundle), shapes captions, or T5 captions (a converted LlamaGen T2I bundle, with --prompts) — from nothing but the
# bundle's own target: its samples (train samples),
# then the EAGLE and LISA drafters, SSD's heads and MuLo-SD's low-resolution drafter trained on them and installed,
# LISA's bounds calibrated, and a short bench of every method. Sized to the time given: a probe times one sample and
# a few steps of each trainer, and the time is shared out (samples 40 %, each drafter 15 %, heads and low-resolution
# drafter 12.5 % each, the rest for calibration and the bench). Resumable: samples are written in chunks, trainers
# resume from their checkpoints, finished stages are skipped; each stage says how long it took.
# --prompts FILE: the captions of a text bundle's samples, calibration and bench (one per line; a T5 bundle needs it).
#   bash scripts/train-drafters.sh BUNDLE [--device cpu|cuda] [--minutes M] [--runs DIR] [--prompts FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=${CLI:-build/bin/speculum-cli}
[ $# -ge 1 ] || { echo "usage: $0 BUNDLE [--device cpu|cuda] [--minutes M] [--runs DIR] [--prompts FILE]" >&2; exit 2; }
BUNDLE=$1; shift
DEVICE=cpu MINUTES=60 RUNS="" PROMPTS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE=$2; shift 2 ;;
    --minutes) MINUTES=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --prompts) PROMPTS=(--prompts "$2"); shift 2 ;;
    *) echo "$0: unknown option '$1' (allowed: --device, --minutes, --runs, --prompts)" >&2; exit 2 ;;
  esac
done
[ -f "$BUNDLE/speculum.json" ] || { echo "$0: '$BUNDLE' is not a bundle (no speculum.json)" >&2; exit 2; }
RUNS=${RUNS:-runs/drafters-$(basename "$BUNDLE")}
THREADS=$(nproc)
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$RUNS"
seconds() { awk -v m="$MINUTES" -v share="$1" 'BEGIN { printf "%d", m * 60 * share }'; }
clock() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(clock)" 'BEGIN { printf "%.0f s", b - a }'; }

# The probe: one sample, and ten steps of each trainer on it, timed whole (start-up included, so sizes err short).
if [ ! -f "$RUNS/probe.txt" ]; then
  start=$(clock)
  $CLI train samples --bundle "$BUNDLE" --count 2 --scene-seed 990000000 --out "$RUNS/probe-samples.safetensors" \
    "${PROMPTS[@]}" --device "$DEVICE" --threads "$THREADS" > /dev/null
  per_sample=$(awk -v a="$start" -v b="$(clock)" 'BEGIN { print (b - a) / 2 }')
  probe_steps() {  # NAME COMMAND...
    local name=$1; shift
    local t0; t0=$(clock)
    "$@" --corpus "$RUNS/probe-samples.safetensors" --out "$RUNS/probe-$name" --steps 10 --batch 2 --device "$DEVICE" \
      --threads "$THREADS" > /dev/null
    awk -v a="$t0" -v b="$(clock)" -v n="$name" 'BEGIN { printf "%s %.4f\n", n, (b - a) / 10 }'
  }
  {
    echo "sample $per_sample"
    probe_steps drafter $CLI train drafter --bundle "$BUNDLE" --objective eagle
    probe_steps heads $CLI train ssd-heads --bundle "$BUNDLE"
    probe_steps low $CLI train low-res --bundle "$BUNDLE"
  } > "$RUNS/probe.tmp"
  mv "$RUNS/probe.tmp" "$RUNS/probe.txt"
  rm -rf "$RUNS"/probe-*
fi
per() { awk -v n="$1" '$1 == n { print $2 }' "$RUNS/probe.txt"; }
count_for() { awk -v s="$(seconds "$1")" -v p="$2" -v floor="$3" 'BEGIN { n = int(s / p); print (n < floor ? floor : n) }'; }
SAMPLES=$(count_for 0.40 "$(per sample)" 16)
DRAFTER_STEPS=$(count_for 0.15 "$(per drafter)" 20)
HEAD_STEPS=$(count_for 0.125 "$(per heads)" 20)
LOW_STEPS=$(count_for 0.125 "$(per low)" 20)
echo "train-drafters: $BUNDLE on $DEVICE in about $MINUTES min: $SAMPLES samples, drafters $DRAFTER_STEPS steps each," \
  "SSD heads $HEAD_STEPS, low-resolution drafter $LOW_STEPS (probe: $RUNS/probe.txt)"

# Samples in chunks of 256 (each chunk's captions or classes from its own seeds), so an interrupted run keeps them.
start=$(clock)
corpora=()
for ((first = 0; first < SAMPLES; first += 256)); do
  chunk="$RUNS/samples-$first.safetensors"
  n=$((SAMPLES - first < 256 ? SAMPLES - first : 256))
  [ -f "$chunk" ] || $CLI train samples --bundle "$BUNDLE" --count "$n" --scene-seed $((970000000 + first)) \
    "${PROMPTS[@]}" --out "$chunk.partial.safetensors" --device "$DEVICE" --threads "$THREADS" > /dev/null
  [ -f "$chunk" ] || mv "$chunk.partial.safetensors" "$chunk"
  corpora+=("$chunk")
done
echo "samples: $SAMPLES images in ${#corpora[@]} file(s), $(took "$start")"

trained() { [ -f "$RUNS/$1.done" ]; }
stage() {  # NAME COMMAND...: runs a trainer to its end, installs, marks it done
  local name=$1; shift
  trained "$name" && { echo "$name: done before"; return; }
  local t0; t0=$(clock)
  "$@" --corpus "${corpora[@]}" --out "$RUNS/$name" --device "$DEVICE" --threads "$THREADS" --install > "$RUNS/$name.log"
  grep -q "installed" "$RUNS/$name.log" || { echo "$name: stopped before its end; re-run to resume"; exit 1; }
  touch "$RUNS/$name.done"
  echo "$name: $(tail -1 "$RUNS/$name.log"), $(took "$t0")"
}
stage drafter-eagle $CLI train drafter --bundle "$BUNDLE" --objective eagle --steps "$DRAFTER_STEPS"
stage drafter-lisa $CLI train drafter --bundle "$BUNDLE" --objective lisa --steps "$DRAFTER_STEPS"
stage ssd-heads $CLI train ssd-heads --bundle "$BUNDLE" --horizontal 5 --vertical 2 --steps "$HEAD_STEPS"
stage low-res $CLI train low-res --bundle "$BUNDLE" --factor 2 --steps "$LOW_STEPS"
start=$(clock)
$CLI calibrate --bundle "$BUNDLE" --images 16 "${PROMPTS[@]}" --threads "$THREADS" | tail -1
echo "calibrate: $(took "$start")"
bench_prompts=builtin:4
if [ ${#PROMPTS[@]} -gt 0 ]; then  # the file's first four prompts
  grep -v -E '^[[:space:]]*(#|$)' "${PROMPTS[1]}" | head -4 > "$RUNS/bench-prompts.txt"
  bench_prompts=$RUNS/bench-prompts.txt
fi
$CLI bench --bundle "$BUNDLE" --methods ar,sjd,eagle,lantern,lisa,ssd,mulo --prompts "$bench_prompts" --seeds 1 --device "$DEVICE" \
  --threads "$THREADS" | grep "^|" | cut -d'|' -f2,4,5,10
echo "train-drafters: every part installed in $BUNDLE"
