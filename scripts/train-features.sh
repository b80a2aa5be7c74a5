#!/usr/bin/env bash
# Trains the shapes feature network behind bench's Fréchet distance (docs/metrics.md) on fresh procedural
# scenes and installs it as resources/eval/shapes-features.safetensors with its log. Deterministic for the
# seed and resumable: re-running continues from <runs>/features/checkpoint. About 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-runs}
CLI=build/bin/speculum-cli
bash scripts/setup.sh
bash scripts/build.sh
export OMP_WAIT_POLICY=PASSIVE
$CLI train features --out "$RUNS/features" --steps "${FEATURE_STEPS:-3000}" --batch 64 --seed 0 --threads "${THREADS:-2}"
mkdir -p resources/eval
cp "$RUNS/features/features.safetensors" resources/eval/shapes-features.safetensors.partial
mv resources/eval/shapes-features.safetensors.partial resources/eval/shapes-features.safetensors
cp "$RUNS/features/log.csv" resources/eval/shapes-features-log.csv
echo "installed resources/eval/shapes-features.safetensors"
