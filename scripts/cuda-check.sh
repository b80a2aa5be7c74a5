#!/usr/bin/env bash
# The CUDA check (docs/real-models.md): on a machine with an NVIDIA GPU and a CUDA LibTorch, builds the
# engine-only CLI against it (scripts/build-cuda.sh; its TORCH_PREFIX and EXTRA_PREFIX apply), then compares the
# CUDA path with the CPU path of the same binary: the tokens of the same seed (sampled and greedy, every method), and
# speed per method on the default bundle and on LlamaGen-B / -XL-shaped random bundles. Writes OUT/cuda-check.md
# (the table) and the raw outputs.
#   PARTS: which parts run (default "tokens llamagen bench"); METHODS, SEEDS, MODES narrow the token comparison.
#   NO_BUILD=1: use BUILD's CLI as it is (scripts/gpu-session.sh builds it first).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/cuda-check}
BUILD=${BUILD:-build-cuda}
SEEDS=${SEEDS:-3}
PARTS=${PARTS:-tokens llamagen bench}
read -r -a METHODS <<<"${METHODS:-ar eagle lantern lisa sjd ssd mulo}"
read -r -a MODES <<<"${MODES:-sampled greedy}"
BUNDLE=resources/models/default
# The default bundle draws from a caption: its prompt guide's first example.
PROMPT=${PROMPT:-$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["prompt_guide"]["examples"][0])' \
  $BUNDLE/speculum.json)}
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null
  lscpu | grep -E "Model name|^CPU\(s\)"
} | tee "$OUT/machine.txt"
[ "${NO_BUILD:-0}" = 1 ] || BUILD=$BUILD bash scripts/build-cuda.sh "$OUT" || exit 1
has() { [[ " $PARTS " == *" $1 "* ]]; }
CLI=$BUILD/bin/speculum-cli

# Tokens: every method, the bundle's sampling and greedy, CPU (one thread) and CUDA, same seeds.
has tokens && for method in "${METHODS[@]}"; do
  for seed in $(seq 0 $((SEEDS - 1))); do
    for device in cpu cuda; do
      for mode in "${MODES[@]}"; do
        extra=()
        [ $mode = greedy ] && extra=(--temperature 0)
        $CLI generate --bundle $BUNDLE --device $device --threads 1 --method "$method" --seed "$seed" --prompt "$PROMPT" "${extra[@]}" \
          --trace "$OUT/$method-$mode-$seed-$device.jsonl" --out "$OUT/$method-$mode-$seed-$device.ppm" >/dev/null 2>>"$OUT/errors.log"
      done
    done
  done
done
has tokens && python3 - "$OUT" "$SEEDS" "${MODES[*]}" "${METHODS[@]}" <<'EOF' | tee "$OUT/tokens.md"
import sys
sys.path.insert(0, "scripts")
from trace_tokens import end_tokens
out, seeds, modes, methods = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
print("| method | mode | runs with identical tokens (CPU vs CUDA) | first differing cell |")
print("| --- | --- | --- | --- |")
for m in methods:
    for mode in modes:
        same, first = 0, []
        for s in range(seeds):
            a, b = (end_tokens(f"{out}/{m}-{mode}-{s}-{d}.jsonl") for d in ("cpu", "cuda"))
            if a is None or b is None:
                first.append(f"seed {s}: missing")
            elif a == b:
                same += 1
            else:
                first.append(f"seed {s}: {next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)}")
        print(f"| {m} | {mode} | {same} / {seeds} | {', '.join(first) or '-'} |")
EOF

if has llamagen; then
  # A converted LlamaGen model on CUDA: the official code's greedy tokens (tests/fixtures/llamagen).
  F=tests/fixtures/llamagen
  rm -rf "$BUILD/llamagen-tiny"
  $CLI convert llamagen --gpt $F/c2i_tiny.pt --vq $F/vq_tiny.pt --out "$BUILD/llamagen-tiny" --set n_head=4 --set image_size=32 \
    >"$OUT/convert.log" 2>&1
  for run in "0 1" "0 4" "3 1" "3 4"; do
    set -- $run
    $CLI generate --bundle "$BUILD/llamagen-tiny" --device cuda --class "$1" --cfg "$2" --top-k 1 \
      --trace "$OUT/llamagen-c$1-cfg$2.jsonl" --out "$OUT/llamagen-c$1-cfg$2.ppm" >/dev/null 2>>"$OUT/errors.log"
  done
  python3 - "$OUT" $F/reference.json <<'EOF' | tee "$OUT/llamagen-tokens.md"
import json, sys
sys.path.insert(0, "scripts")
from trace_tokens import end_tokens
out, ref = sys.argv[1], json.load(open(sys.argv[2]))
for r in ref["runs"]:
    tokens = end_tokens(f"{out}/llamagen-c{r['class_id']}-cfg{int(r['cfg_scale'])}.jsonl")
    same = "no trace" if tokens is None else f"{sum(a == b for a, b in zip(tokens, r['tokens']))} / {len(r['tokens'])}"
    print(f"LlamaGen fixture, class {r['class_id']}, CFG {r['cfg_scale']}: CUDA greedy tokens equal to the official code's: {same}")
EOF
fi

if has bench; then
  # Speed: the default bundle on CUDA and on one CPU thread of this machine, then LlamaGen-shaped random bundles.
  $CLI bench --bundle $BUNDLE --device cuda --methods "$(IFS=,; echo "${METHODS[*]}")" --seeds 8 --csv "$OUT/bench-default-cuda.csv" \
    >"$OUT/bench-default-cuda.txt" 2>&1
  $CLI bench --bundle $BUNDLE --device cpu --threads 1 --methods ar,sjd --seeds 4 --csv "$OUT/bench-default-cpu.csv" \
    >"$OUT/bench-default-cpu.txt" 2>&1
  TIME=()
  [ -x /usr/bin/time ] && TIME=(/usr/bin/time -v)  # peak resident memory
  for preset in llamagen-b llamagen-xl; do
    "${TIME[@]}" $CLI init-random --out "$BUILD/$preset" --preset $preset --condition class --fp16 >/dev/null 2>"$OUT/init-$preset.log"
    "${TIME[@]}" $CLI bench --bundle "$BUILD/$preset" --device cuda --methods ar,sjd --seeds 3 --csv "$OUT/bench-$preset-cuda.csv" \
      >"$OUT/bench-$preset-cuda.txt" 2>"$OUT/bench-$preset-cuda.time"
  done
fi
{
  echo "# CUDA check"
  echo; echo '```'; cat "$OUT/machine.txt"; echo '```'
  echo; echo "## Tokens, CPU vs CUDA (same binary, same seeds)"; echo; cat "$OUT/tokens.md" 2>/dev/null
  echo; cat "$OUT/llamagen-tokens.md" 2>/dev/null
  for f in "$OUT"/bench-*.txt; do [ -f "$f" ] || continue; echo; echo "## $(basename "$f" .txt)"; echo; echo '```'; cat "$f"; echo '```'; done
  for f in "$OUT"/bench-*-cuda.time; do
    [ -f "$f" ] || continue
    echo; echo "$(basename "$f" .time): $(grep -E 'Maximum resident' "$f")"
  done
} >"$OUT/cuda-check.md"
cat "$OUT/cuda-check.md"
