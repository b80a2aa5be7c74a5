#!/usr/bin/env bash
# Is the studio as fast as the CLI? The same request, alternately through `speculum-cli generate` and the
# studio (live preview on, --generate --quit-when-done, under Xvfb when there is no display), RUNS times each,
# both on THREADS LibTorch threads (default: the studio's own default, all cores but one). Prints each pair and
# the medians: the engine's wall time of the request (both print it) and, for the studio, the time from
# Generate to the final image on the canvas, and how long the window's own thread was busy while the engine ran.
# Quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
PROMPT=${PROMPT:-"a red circle above a blue square on a gray background"}
SEED=${SEED:-3}
METHOD=${METHOD:-ar}
THREADS=${THREADS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
export OMP_WAIT_POLICY=PASSIVE
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
studio=(build/bin/speculum --prompt "$PROMPT" --seed "$SEED" --method "$METHOD" --threads "$THREADS" --generate --quit-when-done)
if [ -z "${DISPLAY:-}" ]; then
  if command -v xvfb-run >/dev/null; then studio=(xvfb-run -a -s "-screen 0 1400x900x24" "${studio[@]}"); else export QT_QPA_PLATFORM=offscreen; fi
fi
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "$THREADS thread(s), method $METHOD, \"$PROMPT\", seed $SEED"
printf "%-4s %12s %12s %18s %14s\n" run "cli ms" "studio ms" "studio click→image" "window busy"
for i in $(seq "$RUNS"); do
  cli=$(build/bin/speculum-cli generate --prompt "$PROMPT" --seed "$SEED" --method "$METHOD" --threads "$THREADS" --out "$tmp/cli.png" | sed -n 's/.*, \([0-9]*\) ms)$/\1/p')
  line=$(XDG_CONFIG_HOME="$tmp/config" "${studio[@]}" 2>&1 >/dev/null | grep '^studio:' || true)
  [ -n "$line" ] || { echo "studio-speed: the studio printed no result line" >&2; exit 1; }
  engine=$(sed -n 's/.*, \([0-9]*\) ms, [0-9]* tokens\/s.*/\1/p' <<<"$line")
  shown=$(sed -n 's/.*; \([0-9.]*\) ms from Generate.*/\1/p' <<<"$line")
  busy=$(sed -n 's/.*busy \([0-9.]*\) ms while.*/\1/p' <<<"$line")
  printf "%-4s %12s %12s %18s %14s\n" "$i" "$cli" "$engine" "$shown" "$busy"
  echo "$cli $engine $shown $busy" >>"$tmp/rows"
done
cli_median=$(cut -d' ' -f1 "$tmp/rows" | median)
engine_median=$(cut -d' ' -f2 "$tmp/rows" | median)
shown_median=$(cut -d' ' -f3 "$tmp/rows" | median)
busy_median=$(cut -d' ' -f4 "$tmp/rows" | median)
printf "%-4s %12s %12s %18s %14s\n" median "$cli_median" "$engine_median" "$shown_median" "$busy_median"
awk -v c="$cli_median" -v e="$engine_median" -v s="$shown_median" \
  'BEGIN {printf "studio / cli: %.3f (engine time), %.3f (Generate to final image)\n", e / c, s / c}'
