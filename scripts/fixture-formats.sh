#!/usr/bin/env bash
# What each weight format does to the LlamaGen fixtures (tests/fixtures/llamagen: a tiny GPT with random weights and
# the official code's greedy tokens for four class/CFG runs): the fixture converted, then greedy `generate` per run
# and format, tokens compared with the official ones. f32 must match them all (the CTest fixture tests assert it).
#
#   scripts/fixture-formats.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${CLI:-build/bin/speculum-cli}
fixtures=tests/fixtures/llamagen
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
$cli convert llamagen --gpt $fixtures/c2i_tiny.pt --vq $fixtures/vq_tiny.pt --set n_head=4 --set image_size=32 \
  --out "$work/bundle" > /dev/null  # dim 32 is no published size: its heads and image size are given
runs=$(python3 -c "import json; [print(r['class_id'], r['cfg_scale']) for r in json.load(open('$fixtures/reference.json'))['runs']]")
for format in f32 f16 bf16 q8; do
  i=0
  while read -r class cfg; do
    $cli generate --bundle "$work/bundle" --class "$class" --cfg "$cfg" --temperature 0 --weights $format --threads 1 \
      --out "$work/$format-$i.png" --trace "$work/$format-$i.jsonl" > /dev/null 2>&1
    i=$((i + 1))
  done <<< "$runs"
done
python3 - "$work" "$fixtures/reference.json" <<'PY'
import json, sys
sys.path.insert(0, "scripts")
from trace_tokens import end_tokens
work, reference = sys.argv[1], json.load(open(sys.argv[2]))["runs"]
for fmt in ("f32", "f16", "bf16", "q8"):
    equal = total = whole = 0
    firsts = []
    for i, run in enumerate(reference):
        ours = end_tokens(f"{work}/{fmt}-{i}.jsonl") or []
        official = run["tokens"]
        same = sum(a == b for a, b in zip(ours, official))
        equal, total, whole = equal + same, total + len(official), whole + (ours == official)
        first = next((j for j, (a, b) in enumerate(zip(ours, official)) if a != b), None)
        firsts.append("-" if first is None else f"{first} (official top-1 margin there {run['top1_margin'][first]:.3g})")
    print(f"{fmt}: greedy tokens equal to the official {equal}/{total} ({100 * equal / total:.1f} %), runs identical "
          f"{whole}/{len(reference)}; first difference per run: {'; '.join(firsts)}")
PY
