#!/usr/bin/env bash
# The window's timing check on traces that stay inside every documented limit but are large (issue 31): generates
# them (scripts/large_traces.py), then opens each in the studio at its last step and at its middle step (`--open
# FILE --step N --quit-after 1`, under Xvfb when there is no display) RUNS times, and prints the median seconds from
# start to exit against a normal 256-step trace. A benchmark, not a test: run it on a quiet machine.
#   scripts/window-large-traces.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 scripts/large_traces.py "$tmp"
studio=(build/bin/speculum)
if [ -z "${DISPLAY:-}" ]; then
  if command -v xvfb-run >/dev/null; then studio=(xvfb-run -a -s "-screen 0 1400x900x24" "${studio[@]}"); else export QT_QPA_PLATFORM=offscreen; fi
fi
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
seconds() {  # one run's wall seconds; a run past 120 s counts as 120 (a hang, by this check's measure)
  local start=$EPOCHREALTIME
  XDG_CONFIG_HOME="$tmp/config" timeout 120 "${studio[@]}" --open "$1" --step "$2" --quit-after 1 >/dev/null 2>&1 || true
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f\n", b - a}'
}
steps_of() { grep -c '"type":"StepEnd"' "$1"; }
printf "%-26s %8s %9s %12s %12s %10s\n" trace "MB" steps "last step s" "middle s" "vs normal"
reference=
for name in normal passes-65536 empty-steps-250000 one-cell-450000-commits recommits-20000-steps draft-chain-65536; do
  file="$tmp/$name.jsonl"
  steps=$(steps_of "$file")
  last=$(for _ in $(seq "$runs"); do seconds "$file" "$steps"; done | median)
  middle=$(for _ in $(seq "$runs"); do seconds "$file" $((steps / 2)); done | median)
  [ -n "$reference" ] || reference=$last
  printf "%-26s %8.1f %9d %12.2f %12.2f %9.2fx\n" "$name" "$(awk -v b="$(stat -c %s "$file")" 'BEGIN {print b / 1e6}')" \
    "$steps" "$last" "$middle" "$(awk -v a="$last" -v b="$reference" 'BEGIN {print a / b}')"
done
