#!/usr/bin/env bash
# scripts/train-drafters.sh on the tiny class bundle with a tiny time budget: every part trained and installed, a
# bench of all seven methods printed; a second run finds every stage done and trains nothing again.
set -euo pipefail
cli=$1
bundles=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$bundles/tiny-class" "$tmp/bundle"
export CLI=$cli OMP_NUM_THREADS=1
out=$(bash "$(dirname "$0")/../scripts/train-drafters.sh" "$tmp/bundle" --minutes 0.2 --runs "$tmp/runs")
echo "$out" | grep -q "every part installed" || { echo "FAIL: $out"; exit 1; }
for method in ar sjd eagle lantern lisa ssd mulo; do
  echo "$out" | grep -q "^ \`$method\` |" || { echo "FAIL: no bench row for $method: $out"; exit 1; }
done
again=$(bash "$(dirname "$0")/../scripts/train-drafters.sh" "$tmp/bundle" --minutes 0.2 --runs "$tmp/runs")
[ "$(echo "$again" | grep -c "done before")" = 4 ] || { echo "FAIL: the second run trained again: $again"; exit 1; }
echo "train-drafters: chain ran and resumed"
