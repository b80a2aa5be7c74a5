#!/usr/bin/env bash
# Configures and builds Speculum in Release into build/ (BUILD_DIR; ccache when available).
# SPECULUM_CMAKE_ARGS adds CMake options, e.g. -DSPECULUM_ENGINE_ONLY=ON (no Qt, no OpenCV).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Precompiled headers are cacheable only with this sloppiness; a base dir lets clones in other folders hit.
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime CCACHE_BASEDIR=$PWD
fi
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" ${SPECULUM_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "${SPECULUM_JOBS:-$(nproc)}"
