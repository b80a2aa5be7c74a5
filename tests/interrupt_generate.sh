#!/usr/bin/env bash
# Ctrl-C (SIGINT) and kill (SIGTERM) during `generate`: the run stops within a step, says so, exits 1, and leaves
# nothing behind — no image, no trace, no `.partial` file — while a file already at --out stays untouched.
set -euo pipefail
cli=$1 bundle=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for signal in INT TERM; do
  echo "an earlier image" >"$dir/out.png"
  "$cli" generate --bundle "$bundle" --prompt "a red circle on a gray background" --threads 1 \
    --out "$dir/out.png" --trace "$dir/run.jsonl" 2>"$dir/stderr" >/dev/null &
  pid=$!
  for _ in $(seq 1000); do [ -e "$dir/run.jsonl.partial" ] && break; sleep 0.01; done  # the run has begun
  [ -e "$dir/run.jsonl.partial" ] || { echo "SIG$signal: the run never began"; exit 1; }
  kill -s "$signal" "$pid"
  status=0
  wait "$pid" || status=$?
  [ "$status" = 1 ] || { echo "SIG$signal: exit status $status, expected 1"; cat "$dir/stderr"; exit 1; }
  grep -q "interrupted: nothing written" "$dir/stderr" || { echo "SIG$signal: no message"; cat "$dir/stderr"; exit 1; }
  [ "$(cat "$dir/out.png")" = "an earlier image" ] || { echo "SIG$signal: the existing --out file changed"; exit 1; }
  leftovers=$(ls "$dir" | grep -vxE 'out\.png|stderr' || true)
  [ -z "$leftovers" ] || { echo "SIG$signal: left behind: $leftovers"; exit 1; }
done
echo "SIGINT and SIGTERM: exit 1, nothing written, nothing left"
