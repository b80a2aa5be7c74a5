#!/usr/bin/env bash
# Two builds of speculum-cli side by side on the default bundle, alternating on the same requests: the 1-token
# forward (`bench --forward-cost`) and `ar` ms per image (`bench --methods ar`), at 1 and 2 threads. Build the
# older commit into its own folder first (e.g. `git worktree add /tmp/old OLD && cmake -S /tmp/old -B /tmp/old/build
# -G Ninja && ninja -C /tmp/old/build speculum-cli`). Run it on a quiet machine.
# Two bundles on one build the same way: OLD_BUNDLE=DIR NEW_BUNDLE=DIR with the same CLI twice.
#
#   [OLD_BUNDLE=DIR NEW_BUNDLE=DIR] scripts/before-after.sh OLD_CLI [NEW_CLI] [ROUNDS]
set -euo pipefail
scripts=$(dirname "$0")
old=${1:?usage: before-after.sh OLD_CLI [NEW_CLI] [ROUNDS]}
new=${2:-build/bin/speculum-cli}
rounds=${3:-3}
export OMP_WAIT_POLICY=PASSIVE
for threads in 1 2; do
  for r in $(seq "$rounds"); do
    for which in old new; do
      cli=${!which}
      bundle_of_which=${which^^}_BUNDLE
      bundle=()
      [ -z "${!bundle_of_which:-}" ] || bundle=(--bundle "${!bundle_of_which}")
      one=$($cli bench "${bundle[@]}" --forward-cost --threads $threads --repeats 100 | awk '$1 == 1 {print $4}')  # ms / token: 3 decimals
      image=$($cli bench "${bundle[@]}" --methods ar --seeds 4 --warmup 1 --threads $threads 2>/dev/null |
        awk -F'|' '$2 ~ /`ar`/ {split($8, ms, " "); print ms[1]}')  # the Markdown row's ms / image (median)
      echo "$which $threads $one $image"
    done
  done
done | awk -f "$scripts/median.awk" -f /dev/fd/3 3<<'AWK'
  { fwd[$1, $2] = fwd[$1, $2] " " $3; img[$1, $2] = img[$1, $2] " " $4; print "  " $0 }
  END {
    printf "%-8s %14s %14s %10s %16s %16s %10s\n", "threads", "old 1-tok ms", "new 1-tok ms", "faster", "old ar ms/image", "new ar ms/image", "faster"
    for (t = 1; t <= 2; ++t) {
      of = median(fwd["old", t]); nf = median(fwd["new", t]); oi = median(img["old", t]); ni = median(img["new", t])
      printf "%-8d %14.3f %14.3f %9.2fx %16.1f %16.1f %9.2fx\n", t, of, nf, of / nf, oi, ni, oi / ni
    }
  }
AWK
