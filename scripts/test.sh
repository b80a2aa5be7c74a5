#!/usr/bin/env bash
# One command: install what is missing, build in Release, run the whole test suite; then build the
# engine-only variant (servers, CUDA machines: scripts/cuda-check.sh) and check that it decodes the same
# tokens as the full build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
export QT_QPA_PLATFORM=offscreen OMP_WAIT_POLICY=PASSIVE
ctest --test-dir build --output-on-failure -j "${SPECULUM_JOBS:-$(nproc)}" "$@"

BUILD_DIR=build-engine SPECULUM_CMAKE_ARGS=-DSPECULUM_ENGINE_ONLY=ON bash scripts/build.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
committed() { grep '"type":"Commit"' "$1" | sed 's/"p_of_token":\[[^]]*\],//'; }  # cells, KV range, step, tokens
for method in ar lisa mulo; do
  request=(generate --prompt "a red star above a blue circle" --seed 3 --threads 1 --method $method)
  build/bin/speculum-cli "${request[@]}" --trace "$tmp/full.jsonl" --out "$tmp/full.png" >/dev/null
  build-engine/bin/speculum-cli "${request[@]}" --trace "$tmp/engine.jsonl" --out "$tmp/engine.ppm" >/dev/null
  [ -n "$(committed "$tmp/full.jsonl")" ] && [ "$(committed "$tmp/full.jsonl")" = "$(committed "$tmp/engine.jsonl")" ] ||
    { echo "engine-only build: $method decodes other tokens than the full build"; exit 1; }
  [ "$(head -c 2 "$tmp/engine.ppm")" = P6 ] || { echo "engine-only build: no PPM image"; exit 1; }
done
echo "engine-only build: same tokens as the full build (ar, lisa, mulo)"
