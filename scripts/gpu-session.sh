#!/usr/bin/env bash
# One lease of a GPU machine as one prepared command (such machines come for minutes, a command at a time, and
# start bare): builds the engine-only CLI against the machine's CUDA LibTorch (scripts/build-cuda.sh), then, until
# SECONDS_TOTAL after the start,
#   - trains issue 29's targets (scripts/train-gpu.sh) to a deadline that leaves time for the rest;
#   - meanwhile checks CUDA's tokens against the CPU's for every method, and the LlamaGen fixture's greedy tokens
#     against the official code's (scripts/cuda-check.sh, PARTS="tokens llamagen", one seed);
#   - then times issue 30's trainers on a GPT-B-shaped random bundle (scripts/train-drafters.sh's probe, --device
#     cuda: one sample, ten steps of each trainer, as on the CPU in docs/real-models.md);
#   - and packs into OUT what comes back: each target's EMA weights, manifest and log in pieces under 15 MiB, and
#     the logs, tables and traces in one archive.
# Carried in, not in git: DEPS (Debian's spdlog, fmt, CLI11, nlohmann-json and sentencepiece packages unpacked with
# dpkg -x, for a machine without them), .device/init (the run the continued target starts from) and DATA_ARCHIVE (a
# tar of runs/p29's vq/tokenizer.json, held-out and corpus-*.safetensors, scripts/default-model-pilots.sh data);
# scripts/gpu-session-prepare.sh makes them and says how to keep the travelling tree under the lending tool's 64 MB.
# Usage: SECONDS_TOTAL=540 bash scripts/gpu-session.sh OUT
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: SECONDS_TOTAL=540 bash scripts/gpu-session.sh OUT}
start=$(date +%s)
END=$((start + ${SECONDS_TOTAL:-540}))
DEPS=${DEPS:-$PWD/.device/deps/usr}
DATA_ARCHIVE=${DATA_ARCHIVE:-.device/data.tar.xz}
W=runs/gpu
CLI=build-cuda/bin/speculum-cli
export LD_LIBRARY_PATH=$DEPS/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT" "$W"
log() { echo "[$(($(date +%s) - start)) s] $*" | tee -a "$W/session.log"; }
pack() {  # the logs, tables and traces; each target's weights in pieces
  tar -czf "$OUT/logs.tar.gz" --exclude='*.safetensors' --exclude='*.pt' "$W" 2>/dev/null
  for ema in "$W"/targets/*/checkpoint/ema.safetensors; do
    run=$(basename "$(dirname "$(dirname "$ema")")")
    [[ -f $ema && $run != probe-* ]] || continue
    tar -cf - -C "$W/targets" "$run/speculum.json" "$run/log.csv" "$run/checkpoint/ema.safetensors" \
      "$run/checkpoint/state.json" | split -b 15M - "$OUT/target-$run.tar.part-"
  done
}

log "unpacking the data and building"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" \
  "$DATA_ARCHIVE" "$W/data" &
EXTRA_PREFIX=$DEPS bash scripts/build-cuda.sh "$W/build-logs" 2>&1 | tee -a "$W/session.log"
wait
if [ ! -x "$CLI" ]; then log "the build failed"; cp "$W"/build-logs/*.log "$OUT/" 2>/dev/null; pack; exit 1; fi
first=$($CLI generate --device cuda --method ar --seed 0 --prompt "a red circle on a gray background" --out "$W/first.ppm" 2>&1)
log "built; $(tail -1 <<<"$first")"

PARTS="tokens llamagen" SEEDS=1 NO_BUILD=1 bash scripts/cuda-check.sh "$W/check" >"$W/check.log" 2>&1 &
check=$!
[ -f .device/init/speculum.json ] && export INIT=$PWD/.device/init  # where the continued run starts
DEADLINE=$((END - 110)) DATA=$W/data CLI=$CLI bash scripts/train-gpu.sh "$W/targets" 2>&1 | tee -a "$W/session.log"
wait $check
log "targets done; the CUDA check: $(grep -c '| 1 / 1 |' "$W/check/tokens.md" 2>/dev/null) method-mode pairs with equal tokens"

if [ $((END - $(date +%s))) -gt 45 ]; then
  $CLI init-random --out "$W/llamagen-b" --preset llamagen-b --condition class >"$W/init-b.log" 2>&1
  timeout -s INT $((END - $(date +%s) - 25)) env CLI=$CLI bash scripts/train-drafters.sh "$W/llamagen-b" --device cuda \
    --minutes 1 --runs "$W/drafters-b" >"$W/drafters-b.log" 2>&1
  log "GPT-B trainers on CUDA (s per sample, s per step of 2): $(tr '\n' ' ' 2>/dev/null <"$W/drafters-b/probe.txt")"
fi
pack
log "packed: $(ls "$OUT" | tr '\n' ' ')"
