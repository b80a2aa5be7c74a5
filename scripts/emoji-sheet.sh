#!/usr/bin/env bash
# The model card's emoji sample sheet: emoji captions (8 from the training split, 4 held out: every index divisible by
# 16), each beside the rendered emoji, drawn by each bundle with `ar` at its recommended sampling, seeds 0 and 1.
#   bash scripts/emoji-sheet.sh OUT.png LABEL=BUNDLE...     e.g. new=resources/models/default old=runs/old-default
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: emoji-sheet.sh OUT.png LABEL=BUNDLE...}; shift
[ $# -gt 0 ] || { echo "emoji-sheet: name at least one LABEL=BUNDLE" >&2; exit 1; }
CLI=${CLI:-build/bin/speculum-cli}
EMOJI=${EMOJI:-runs/emoji}
INDICES=${INDICES:-"1 451 901 1351 1801 2251 2701 3151 160 1200 2400 3200"}
FONT=${FONT:-/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf}  # fonts-dejavu-core; ImageMagick has no default font here
export OMP_WAIT_POLICY=PASSIVE
[ -f "$EMOJI/captions.jsonl" ] || $CLI data emoji --out "$EMOJI"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tiles=()
for i in $INDICES; do
  line=$(sed -n "$((i + 1))p" "$EMOJI/captions.jsonl")
  caption=$(echo "$line" | python3 -c 'import json,sys; print(json.load(sys.stdin)["caption"])')
  file=$(echo "$line" | python3 -c 'import json,sys; print(json.load(sys.stdin)["file"])')
  split=train; [ $((i % 16)) -eq 0 ] && split=held-out
  short=$caption; [ ${#short} -le 22 ] || short="${short:0:21}…"
  tiles+=(-label "$short ($split)" "$EMOJI/$file")
  for spec in "$@"; do
    label=${spec%%=*} bundle=${spec#*=}
    for seed in 0 1; do
      $CLI generate --bundle "$bundle" --prompt "$caption" --seed $seed --threads 1 --out "$work/$label-$i-$seed.png" >/dev/null
      tiles+=(-label "$label, seed $seed" "$work/$label-$i-$seed.png")
    done
  done
done
columns=$((1 + 2 * $#))
montage "${tiles[@]}" -filter point -geometry 128x128+6+6 -tile "${columns}x" -font "$FONT" -pointsize 11 "$work/sheet.png"
mv "$work/sheet.png" "$out.tmp.png" && mv "$out.tmp.png" "$out"
echo "wrote $out"
