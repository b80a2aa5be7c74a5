#!/usr/bin/env bash
# Builds the engine-only CLI (no Qt, no OpenCV) against a CUDA LibTorch, on a machine with an NVIDIA GPU:
# scripts/cuda-check.sh and scripts/gpu-session.sh start here. Writes BUILD/bin/speculum-cli; logs in LOGS.
#   TORCH_PREFIX: LibTorch's CMake prefix (default: python3's torch package, as on 2026-12-04 with PyTorch 2.11).
#   EXTRA_PREFIX: more prefixes, e.g. spdlog / fmt / CLI11 / nlohmann-json / sentencepiece unpacked from Debian
#   packages (dpkg -x) on a machine without them.
# A wheel's Torch config enables CMake's CUDA language, so nvcc is looked for beside the toolkit when it is not on
# PATH. The build keeps going past a failing file (ninja -k 0), so one try lists every error.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-cuda}
LOGS=${1:-$BUILD}
mkdir -p "$LOGS"
torch_prefix=${TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')}
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
cuda=()
[ -n "$nvcc" ] && cuda=(-DCMAKE_CUDA_COMPILER="$nvcc")
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPECULUM_ENGINE_ONLY=ON -DSPECULUM_PYTHON=OFF \
  -DTORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" "${cuda[@]}" -DCMAKE_PREFIX_PATH="$torch_prefix;${EXTRA_PREFIX:-}" \
  ${SPECULUM_CMAKE_ARGS:-} >"$LOGS/configure.log" 2>&1 || { tail -40 "$LOGS/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" -- -k 0 >"$LOGS/build.log" 2>&1 ||
  { grep -B2 -A12 "error" "$LOGS/build.log" | head -150; exit 1; }
echo "built $BUILD/bin/speculum-cli"
