#!/usr/bin/env bash
# Fuzzes the torch.save reader (engine/io/zip_archive, torch_pickle, torch_checkpoint) under AddressSanitizer
# and UBSan: ROUNDS mutations of the LlamaGen fixtures (default 50,000). Any sanitizer report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-50000}
out=${TMPDIR:-/tmp}/speculum-fuzz
mkdir -p "$out"
g++ -std=c++20 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -Iengine \
  tests/fuzz/fuzz_torch_checkpoint.cpp engine/io/zip_archive.cpp engine/io/torch_pickle.cpp \
  engine/io/torch_checkpoint.cpp engine/io/safetensors.cpp engine/io/atomic_file.cpp engine/io/json_fields.cpp -o "$out/fuzz_torch_checkpoint"
f=tests/fixtures/llamagen
"$out/fuzz_torch_checkpoint" "$rounds" "$out/scratch.pt" $f/c2i_tiny.pt $f/c2i_tiny_bf16_prefixed.pt
