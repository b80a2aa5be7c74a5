#!/usr/bin/env bash
# Issue 30's path on a T5-conditioned bundle (the tiny LlamaGen t2i fixture converted with its T5 folder): the
# target's own samples with captions from --prompts, both drafters, SSD heads and MuLo-SD's low-resolution drafter
# trained on them (the captions encoded by T5 when each trainer loads the samples), each trainer's loss falling,
# LISA's bounds calibrated on the same prompts; then all seven methods generate and eagle (lossless) decodes exactly
# ar's greedy tokens. Also: a T5 bundle without --prompts, and --prompts on a class bundle, are refused.
set -euo pipefail
cli=$1
fixtures=$2
bundles=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { OMP_NUM_THREADS=1 "$cli" "$@" --threads 1; }
"$cli" convert llamagen --gpt "$fixtures/llamagen-t2i/t2i_tiny.pt" --vq "$fixtures/llamagen/vq_tiny.pt" --set n_head=4 \
  --set image_size=32 --t5 "$fixtures/llamagen-t2i/t5_tiny" --out "$tmp/b" > /dev/null
printf '# captions for the samples\na red cat\nA Photo of the Golden Gate Bridge\n\n  a blue bird on a branch  \n' > "$tmp/prompts.txt"

out=$(run train samples --bundle "$tmp/b" --count 1 --out "$tmp/x.safetensors" 2>&1) && fail "samples without --prompts ran"
echo "$out" | grep -q "reads T5 features: give its captions with --prompts FILE" || fail "$out"
out=$(run train samples --bundle "$bundles/tiny-class" --count 1 --prompts "$tmp/prompts.txt" --out "$tmp/x.safetensors" 2>&1) &&
  fail "--prompts on a class bundle ran"
echo "$out" | grep -q "is class-conditioned; it takes classes, not prompts" || fail "$out"
[ ! -e "$tmp/x.safetensors" ] || fail "a refused run left a corpus behind"

run train samples --bundle "$tmp/b" --count 12 --prompts "$tmp/prompts.txt" --out "$tmp/samples.safetensors" > /dev/null
python3 - "$tmp/samples.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8)); header = json.loads(f.read(n))
captions = json.loads(header["__metadata__"]["captions"])
assert len(captions) == 12 and header["codes"]["shape"][0] == 12, (len(captions), header["codes"])
assert set(captions) == {"a red cat", "A Photo of the Golden Gate Bridge", "a blue bird on a branch"}, set(captions)
assert "classes" not in header, "a T5 corpus has no classes"
print("samples: 12 images over", len(set(captions)), "captions")
PY

# Each trainer: enough steps at a high rate for its loss to fall from the first logged step to the last.
falls() {  # run folder: the mean loss of the last three logged rows is below the first row's
  python3 - "$1/log.csv" <<'PY' || fail "loss did not fall in $1"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
losses = [float(r["loss"]) for r in rows]
assert len(losses) >= 4, losses
assert sum(losses[-3:]) / 3 < losses[0], losses
PY
}
steps=(--steps 40 --checkpoint-every 5 --warmup 2 --lr 0.003 --batch 4)
for objective in eagle lisa; do
  run train drafter --bundle "$tmp/b" --objective $objective --corpus "$tmp/samples.safetensors" --out "$tmp/$objective" \
    "${steps[@]}" --install > "$tmp/$objective.log"
  grep -q "T5: encoded 3 distinct captions of 12 images" "$tmp/$objective.log" || fail "drafter: $(cat "$tmp/$objective.log")"
  falls "$tmp/$objective"
done
run train ssd-heads --bundle "$tmp/b" --corpus "$tmp/samples.safetensors" --out "$tmp/heads" "${steps[@]}" --horizontal 3 \
  --vertical 1 --install > /dev/null
falls "$tmp/heads"
run train low-res --bundle "$tmp/b" --corpus "$tmp/samples.safetensors" --out "$tmp/low" --factor 2 "${steps[@]}" --install > /dev/null
falls "$tmp/low"
run calibrate --bundle "$tmp/b" --prompts "$tmp/prompts.txt" --images 4 --positions 8 | grep -q "wrote them into" || fail "calibrate"

tokens() { python3 -c "import sys; sys.path.insert(0, '$(dirname "$0")/../scripts'); from trace_tokens import end_tokens; print(end_tokens('$1'))"; }
for method in ar eagle lantern lisa sjd ssd mulo; do
  run generate --bundle "$tmp/b" --prompt "a red cat" --seed 3 --top-k 1 --cfg 4 --method $method --out "$tmp/$method.png" \
    --trace "$tmp/$method.jsonl" > /dev/null 2> "$tmp/$method.err" || fail "$method: $(cat "$tmp/$method.err")"
  [ -s "$tmp/$method.png" ] || fail "$method drew nothing"
done
ar_tokens=$(tokens "$tmp/ar.jsonl")
eagle_tokens=$(tokens "$tmp/eagle.jsonl")
[[ $ar_tokens == "["* ]] && [ "$eagle_tokens" = "$ar_tokens" ] || fail "eagle's greedy tokens differ from ar's"
echo "T5 bundle: samples, eagle / lisa drafters, SSD heads, low-res drafter, calibration; seven methods generate"
