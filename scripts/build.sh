#!/usr/bin/env bash
# Configures and builds Speculum in Release into build/ (ccache when available).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" ${SPECULUM_CMAKE_ARGS:-}
cmake --build build -j "${SPECULUM_JOBS:-$(nproc)}"
