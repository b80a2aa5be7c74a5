#!/usr/bin/env bash
# Issue 30's path on a class-conditioned bundle: the target's own samples (train samples, classes drawn from --classes),
# an EAGLE drafter, SSD heads and MuLo-SD's low-resolution drafter (the samples downscaled through the bundle's
# tokenizer) trained on them and installed, LISA's bounds calibrated on the target's own images; then eagle
# (lossless) decodes exactly ar's greedy tokens and lisa, ssd and mulo run on the new parts. Then the one-command chain. Also: --classes outside the table, or on a text bundle, is refused.
set -euo pipefail
cli=$1
bundles=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$bundles/tiny-class" "$tmp/bundle"
# Without the random low-resolution drafter init-random gave it: mulo must come from the samples below.
python3 - "$tmp/bundle" <<'PY'
import json, os, sys
path = os.path.join(sys.argv[1], "speculum.json")
manifest = json.load(open(path))
os.remove(os.path.join(sys.argv[1], manifest.pop("low_res_drafter")["weights"]))
json.dump(manifest, open(path, "w"), indent=2)
PY
run() { OMP_NUM_THREADS=1 "$cli" "$@" --threads 1; }
run train samples --bundle "$tmp/bundle" --count 12 --classes 2,5 --out "$tmp/samples.safetensors" > /dev/null
python3 - "$tmp/samples.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8)); header = json.loads(f.read(n)); data = f.read()
info = header["classes"]
begin, end = info["data_offsets"]
classes = struct.unpack("<%di" % (info["shape"][0]), data[begin:end])
assert info["dtype"] == "I32" and len(classes) == 12, info
assert set(classes) == {2, 5}, classes  # both drawn, nothing else
print("samples: 12 images of classes", sorted(set(classes)))
PY
run train drafter --bundle "$tmp/bundle" --corpus "$tmp/samples.safetensors" --out "$tmp/drafter" --steps 6 --batch 4 --install > /dev/null
run train ssd-heads --bundle "$tmp/bundle" --corpus "$tmp/samples.safetensors" --out "$tmp/heads" --steps 4 --batch 4 \
  --horizontal 5 --vertical 2 --install > /dev/null
out=$(run generate --bundle "$tmp/bundle" --prompt circle --method mulo --out "$tmp/none.png" 2>&1) && exit 1
echo "$out" | grep -q "needs a low-resolution drafter" || { echo "FAIL: $out"; exit 1; }
run train low-res --bundle "$tmp/bundle" --corpus "$tmp/samples.safetensors" --out "$tmp/low" --factor 2 --steps 4 --batch 4 \
  --install > /dev/null
python3 - "$tmp/low/low-res-corpus.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8)); header = json.loads(f.read(n))
assert header["codes"]["shape"] == [12, 16] and header["classes"]["shape"] == [12], header  # 8x8 -> 4x4, classes kept
PY
run calibrate --bundle "$tmp/bundle" --images 4 --positions 16 | grep -q "wrote them into" || { echo "FAIL: calibrate"; exit 1; }
grep -q '"soft_verification"' "$tmp/bundle/speculum.json" || { echo "FAIL: no soft-verification bounds in the manifest"; exit 1; }
tokens() { python3 -c "import sys; sys.path.insert(0, '$(dirname "$0")/../scripts'); from trace_tokens import end_tokens; print(end_tokens('$1'))"; }
for method in ar eagle lisa ssd mulo; do
  run generate --bundle "$tmp/bundle" --prompt circle --seed 3 --top-k 1 --method $method --out "$tmp/$method.png" \
    --trace "$tmp/$method.jsonl" > /dev/null
done
ar_tokens=$(tokens "$tmp/ar.jsonl")
eagle_tokens=$(tokens "$tmp/eagle.jsonl")
[[ $ar_tokens == "["* ]] && [ "$eagle_tokens" = "$ar_tokens" ] || { echo "FAIL: eagle's greedy tokens differ from ar's"; exit 1; }
for method in lisa ssd mulo; do [ -s "$tmp/$method.png" ] || { echo "FAIL: $method drew nothing"; exit 1; }; done
out=$(run train samples --bundle "$tmp/bundle" --count 1 --classes 99 --out "$tmp/x.safetensors" 2>&1) && exit 1
echo "$out" | grep -q "class 99 is outside \[0, 10)" || { echo "FAIL: $out"; exit 1; }
out=$(run train samples --bundle "$bundles/tiny-text" --count 1 --classes 1 --out "$tmp/x.safetensors" 2>&1) && exit 1
echo "$out" | grep -q "is text-conditioned, not class-conditioned" || { echo "FAIL: $out"; exit 1; }
# The same chain in one command (scripts/train-drafters.sh) on a fresh copy, with a tiny time budget: every part
# installed, a bench row per method; a second run finds every stage done and trains nothing again.
cp -r "$bundles/tiny-class" "$tmp/chain"
chain() { CLI=$cli OMP_NUM_THREADS=1 bash "$(dirname "$0")/../scripts/train-drafters.sh" "$tmp/chain" --minutes 0.2 --runs "$tmp/chain-runs"; }
out=$(chain)
echo "$out" | grep -q "every part installed" || { echo "FAIL: $out"; exit 1; }
for method in ar sjd eagle lantern lisa ssd mulo; do
  echo "$out" | grep -q "^ \`$method\` |" || { echo "FAIL: no bench row for $method: $out"; exit 1; }
done
[ "$(chain | grep -c "done before")" = 4 ] || { echo "FAIL: the second run of train-drafters.sh trained again"; exit 1; }
echo "a class bundle trained its own drafter and heads: eagle equals ar greedy; train-drafters.sh ran and resumed"
