#!/usr/bin/env bash
# The text-to-image path through the CLI, as a user types it: convert a LlamaGen t2i checkpoint with its T5 folder,
# install LANTERN's drafter, generate with ar and eagle, see the warning for a prompt past 120 T5 tokens, measure the
# encoder, calibrate LISA's soft verification and run lisa soft=1 on LANTERN's drafter; and the refusals (a c2i GPT
# given --t5, a t2i GPT without it) in one line each, with nothing left behind.
set -euo pipefail
cli=$1
fixtures=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
t2i=(--gpt "$fixtures/llamagen-t2i/t2i_tiny.pt" --vq "$fixtures/llamagen/vq_tiny.pt" --set n_head=4 --set image_size=32)

"$cli" convert llamagen "${t2i[@]}" --t5 "$fixtures/llamagen-t2i/t5_tiny" --out "$tmp/b" > "$tmp/convert.txt"
grep -q "text-to-image: 120 caption slots of width 32" "$tmp/convert.txt" || fail "convert did not report the caption slots"
grep -q '"kind": "t5"' "$tmp/b/speculum.json" || fail "manifest lacks condition.kind t5"

"$cli" convert lantern-drafter --drafter "$fixtures/llamagen-t2i/lantern_drafter_tiny" --bundle "$tmp/b" > "$tmp/lantern.txt"
grep -q "installed as the 'eagle' drafter (convention lantern)" "$tmp/lantern.txt" || fail "lantern-drafter did not install"

for method in ar eagle; do
  "$cli" generate --bundle "$tmp/b" --prompt "A Photo of the Golden Gate Bridge" --method $method --top-k 1 --cfg 4 --threads 1 \
    --out "$tmp/$method.png" --trace "$tmp/$method.jsonl" 2> "$tmp/$method.log" >/dev/null || { cat "$tmp/$method.log"; fail "generate $method"; }
  [ -s "$tmp/$method.png" ] || fail "no image from $method"
done
# LANTERN's relaxed acceptance (latent neighbours from the VQ codebook) runs on the imported drafter too.
"$cli" generate --bundle "$tmp/b" --prompt "a red cat" --method lantern --threads 1 --out "$tmp/lantern.png" > "$tmp/lantern.log" 2>&1 ||
  fail "lantern: $(cat "$tmp/lantern.log")"
# Lossless: greedy eagle commits ar's tokens.
tokens() { grep '"type":"Commit"' "$1" | grep -o '"tokens":\[[0-9,]*\]' | tr -d '\n'; }
[ "$(tokens "$tmp/ar.jsonl")" = "$(tokens "$tmp/eagle.jsonl")" ] || fail "eagle committed other tokens than ar"

long=$(printf 'a small red bird sitting on a long green branch %.0s' $(seq 1 30))
"$cli" generate --bundle "$tmp/b" --prompt "$long" --threads 1 --out "$tmp/long.png" > "$tmp/long.log" 2>&1
grep -q "T5 tokens; the model reads 120 (eos included), so this is cut: '" "$tmp/long.log" || { cat "$tmp/long.log"; fail "no cut warning"; }

"$cli" bench --bundle "$tmp/b" --forward-cost --threads 1 > "$tmp/cost.txt"
grep -Eq "T5 encoder: [0-9.]+ ms per prompt" "$tmp/cost.txt" || fail "bench --forward-cost did not time the encoder"

set +e
"$cli" convert llamagen --gpt "$fixtures/llamagen/c2i_tiny.pt" --vq "$fixtures/llamagen/vq_tiny.pt" --t5 "$fixtures/llamagen-t2i/t5_tiny" \
  --set n_head=4 --out "$tmp/c" > "$tmp/c2i.txt" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || fail "a c2i GPT with --t5: exit $rc, expected 1"
grep -q "is a class-conditional LlamaGen GPT (no cls_embedding.cap_proj): it takes no --t5" "$tmp/c2i.txt" || fail "c2i with --t5: $(cat "$tmp/c2i.txt")"
[ "$(wc -l < "$tmp/c2i.txt")" -eq 1 ] || fail "the refusal is not one line"
[ ! -e "$tmp/c" ] && [ ! -e "$tmp/c.partial" ] || fail "a refused conversion left files"
set +e
"$cli" convert llamagen "${t2i[@]}" --out "$tmp/d" > "$tmp/no-t5.txt" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "give its T5 encoder with --t5 FLAN_T5_DIR" "$tmp/no-t5.txt" || fail "t2i without --t5: $(cat "$tmp/no-t5.txt")"
# LISA's soft verification with LANTERN's drafter (its verification-only ablation): calibrate, then lisa soft=1 runs.
# A T5 bundle's calibration captions come from a prompts file; without one it is refused.
"$cli" calibrate --bundle "$tmp/b" --images 4 --threads 1 > "$tmp/calibrate.txt" 2>&1 && fail "calibrate ran without --prompts"
grep -q "give its captions with --prompts FILE" "$tmp/calibrate.txt" || fail "calibrate without prompts: $(cat "$tmp/calibrate.txt")"
printf 'a red cat\nA Photo of the Golden Gate Bridge\n' > "$tmp/prompts.txt"
"$cli" calibrate --bundle "$tmp/b" --prompts "$tmp/prompts.txt" --images 4 --threads 1 > "$tmp/calibrate.txt" 2>&1 ||
  fail "calibrate: $(cat "$tmp/calibrate.txt")"
grep -q "wrote them into" "$tmp/calibrate.txt" || fail "calibrate wrote no bounds"
"$cli" generate --bundle "$tmp/b" --prompt "a red cat" --method lisa --opt lisa_drafter=0 --opt soft=1 --threads 1 --out "$tmp/lisa.png" > "$tmp/lisa.log" 2>&1 ||
  fail "lisa soft=1: $(cat "$tmp/lisa.log")"
echo "t2i CLI: convert, lantern-drafter, generate ar/eagle (same tokens), cut warning, encoder cost, calibrate + lisa soft=1, refusals: ok"
