#!/usr/bin/env bash
# Fuzzes every parser of outside data with libFuzzer under AddressSanitizer and UBSan (tests/fuzz; clang): the
# safetensors reader, manifests, traces, requests (a PNG's parameters chunk), prompts (with LlamaGen's caption cleaning
# and T5's tokenizer), PyTorch checkpoints, and a T5 folder's config.json and weight indexes,
# SECONDS each (default 60), seeded with the malformed-inputs corpus and the fixtures. A crash, a sanitizer report,
# an exception other than speculum::Error, a hang (10 s per input) or an allocation over 2 GB fails the run and
# leaves the input in build-fuzz/findings/: reproduce with `build-fuzz/bin/fuzz_<target> FILE`, fix, and add the
# file to tests/malformed/ named after what is wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
CC=clang CXX=clang++ BUILD_DIR=build-fuzz SPECULUM_CMAKE_ARGS="-DSPECULUM_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo" \
  bash scripts/build.sh
declare -A seeds=(
  [safetensors]="tests/malformed/safetensors"
  [manifest]="tests/malformed/manifests resources/models/default/speculum.json"
  [trace]="tests/malformed/traces tests/fuzz/seeds/trace"
  [request]="tests/fuzz/seeds/request"
  [prompt]="tests/fuzz/seeds/prompt"
  [torch_checkpoint]="tests/malformed/checkpoints tests/fixtures/llamagen/c2i_tiny.pt tests/fixtures/llamagen/c2i_tiny_bf16_prefixed.pt tests/fixtures/llamagen-t2i/t2i_tiny.pt tests/fixtures/llamagen-t2i/t5_tiny/pytorch_model.bin tests/fixtures/llamagen-t2i/lantern_drafter_tiny/pytorch_model.bin"
  [t5_files]="tests/malformed/t5-configs tests/malformed/t5-indexes tests/fixtures/llamagen-t2i/t5_tiny/config.json tests/fixtures/llamagen-t2i/t5_tiny_sharded/model.safetensors.index.json tests/fixtures/llamagen-t2i/t5_tiny_sharded/pytorch_model.bin.index.json"
)
mkdir -p build-fuzz/findings
failed=()
printf "%-18s %8s %10s %8s  %s\n" target seconds executions corpus result
for target in safetensors manifest trace request prompt torch_checkpoint t5_files; do
  corpus=build-fuzz/corpus/$target
  mkdir -p "$corpus"
  # Seed files go in as a read-only second corpus; a folder of single files is made for loose seeds.
  seed_dir=build-fuzz/seeds/$target
  rm -rf "$seed_dir" && mkdir -p "$seed_dir"
  for s in ${seeds[$target]}; do if [ -d "$s" ]; then cp "$s"/* "$seed_dir"/ 2>/dev/null || true; else cp "$s" "$seed_dir"/; fi; done
  rm -f "$seed_dir"/README.md
  log=build-fuzz/$target.log
  if build-fuzz/bin/fuzz_$target -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536 \
       -artifact_prefix=build-fuzz/findings/$target- -print_final_stats=1 "$corpus" "$seed_dir" >"$log" 2>&1; then
    result=clean
  else
    result="FINDING (see $log)"
    failed+=("$target")
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  printf "%-18s %8s %10s %8s  %s\n" "$target" "$seconds" "${runs:-?}" "$(ls "$corpus" | wc -l)" "$result"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}; inputs in build-fuzz/findings/" >&2
  for target in "${failed[@]}"; do grep -m5 -E "ERROR|SUMMARY|runtime error|terminate|what\(\)" build-fuzz/$target.log >&2 || true; done
  exit 1
fi
