#!/usr/bin/env bash
# One command: install what is missing, build in Release, start the studio on the default bundle.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec ./build/bin/speculum "$@"
