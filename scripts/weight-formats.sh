#!/usr/bin/env bash
# What each weight format does to the default bundle's output: greedy tokens against f32 (`generate --temperature 0
# --trace` on the first prompts of the eval protocol) and the checker's pass rate (`eval`, greedy and the bundle's
# sampling), plus the 1-token forward. Run it on a quiet machine.
#
#   scripts/weight-formats.sh [PROMPTS]      PROMPTS: eval prompts per format (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${CLI:-build/bin/speculum-cli}
prompts=${1:-200}
work=${WORK:-runs/weight-formats}
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$work"
captions=("a red circle above a blue square" "two green triangles on a white background" "a yellow star left of a purple heart"
          "three blue circles" "a small orange square below a big red triangle" "a pink heart on a noisy teal background")
for format in f32 f16 bf16 q8; do
  for i in "${!captions[@]}"; do
    $cli generate --weights $format --temperature 0 --threads 1 --prompt "${captions[$i]}" --out "$work/$format-$i.png" \
      --trace "$work/$format-$i.jsonl" 2>/dev/null
  done
  pass_rate() { awk '$1 == "all" {print $2 "/" $4 " (" $5 " %)"; exit}'; }  # eval's "all claims held" line
  greedy=$($cli eval --weights $format --temperature 0 --prompts "$prompts" --threads 1 2>/dev/null | pass_rate)
  sampled=$($cli eval --weights $format --prompts "$prompts" --threads 1 2>/dev/null | pass_rate)
  step=$($cli bench --forward-cost --weights $format --threads 1 --repeats 100 | awk '$1 == 1 {print $2}')
  echo "$format | 1-token forward $step ms | greedy eval: $greedy | sampled eval: $sampled"
done
python3 - "$work" "${#captions[@]}" <<'PY'
import sys
sys.path.insert(0, "scripts")
from trace_tokens import end_tokens
work, n = sys.argv[1], int(sys.argv[2])
for fmt in ("f16", "bf16", "q8"):
    same = total = identical = 0
    for i in range(n):
        a, b = end_tokens(f"{work}/f32-{i}.jsonl"), end_tokens(f"{work}/{fmt}-{i}.jsonl")
        same += sum(x == y for x, y in zip(a, b)); total += len(a); identical += a == b
    print(f"{fmt}: greedy tokens equal to f32 {same}/{total} ({100 * same / total:.1f} %), whole images identical {identical}/{n}")
PY
