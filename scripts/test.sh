#!/usr/bin/env bash
# One command: install what is missing, build in Release, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
export QT_QPA_PLATFORM=offscreen OMP_WAIT_POLICY=PASSIVE
ctest --test-dir build --output-on-failure -j "${SPECULUM_JOBS:-$(nproc)}" "$@"
