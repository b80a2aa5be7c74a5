#!/usr/bin/env bash
# One command: install what is missing, build in Release, run the whole test suite; then build the
# engine-only variant (servers, CUDA machines: scripts/cuda-check.sh) and check that it decodes the same
# tokens as the full build; then fuzz every parser of outside data for SPECULUM_FUZZ_SECONDS each (default 30;
# 0 skips) and run the engine and CLI tests again under AddressSanitizer + UBSan (SPECULUM_SANITIZE_TESTS=0
# skips). Stage times at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
stage_start=$SECONDS
stage_times=()
stage_done() { stage_times+=("$(printf "%-34s %4d s" "$1" $((SECONDS - stage_start)))"); stage_start=$SECONDS; }
bash scripts/setup.sh
bash scripts/build.sh
stage_done "set-up and Release build"
export QT_QPA_PLATFORM=offscreen OMP_WAIT_POLICY=PASSIVE
ctest --test-dir build --output-on-failure -j "${SPECULUM_JOBS:-$(nproc)}" "$@"
stage_done "tests (Release)"

BUILD_DIR=build-engine SPECULUM_CMAKE_ARGS=-DSPECULUM_ENGINE_ONLY=ON bash scripts/build.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
committed() { grep '"type":"Commit"' "$1" | sed 's/"p_of_token":\[[^]]*\],//'; }  # cells, KV range, step, tokens
for method in ar lisa mulo; do
  request=(generate --prompt "a red star above a blue circle" --seed 3 --threads 1 --method $method)
  build/bin/speculum-cli "${request[@]}" --trace "$tmp/full.jsonl" --out "$tmp/full.png" >/dev/null
  build-engine/bin/speculum-cli "${request[@]}" --trace "$tmp/engine.jsonl" --out "$tmp/engine.ppm" >/dev/null
  [ -n "$(committed "$tmp/full.jsonl")" ] && [ "$(committed "$tmp/full.jsonl")" = "$(committed "$tmp/engine.jsonl")" ] ||
    { echo "engine-only build: $method decodes other tokens than the full build"; exit 1; }
  [ "$(head -c 2 "$tmp/engine.ppm")" = P6 ] || { echo "engine-only build: no PPM image"; exit 1; }
done
echo "engine-only build: same tokens as the full build (ar, lisa, mulo)"
stage_done "engine-only build and token check"

if [ "${SPECULUM_FUZZ_SECONDS:-30}" -gt 0 ]; then
  bash scripts/fuzz.sh "${SPECULUM_FUZZ_SECONDS:-30}"
  stage_done "fuzzing (7 parsers)"
fi

# The engine and CLI tests under AddressSanitizer + UBSan (any report aborts the test); a second build folder
# without the GUI. Leak checking is off: LibTorch and Qt keep their process-lifetime allocations to exit. The
# chi-squared losslessness tests (minutes of sampling through code the other tests cover) run in the Release
# build only. The text-to-image tests (names with "t2i") are left out too: T5's tokenizer lives behind a dlopen with
# RTLD_DEEPBIND (engine/text/sentencepiece_shim.h), which the sanitizer runtime refuses; the cleaning and tokenizer
# code runs under AddressSanitizer + UBSan in fuzz_prompt instead.
if [ "${SPECULUM_SANITIZE_TESTS:-1}" = 1 ]; then
  BUILD_DIR=build-asan SPECULUM_CMAKE_ARGS="-DSPECULUM_SANITIZE=ON -DSPECULUM_BUILD_GUI=OFF" bash scripts/build.sh
  stage_done "sanitizer build"
  export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1
  ctest --test-dir build-asan --output-on-failure -j "${SPECULUM_JOBS:-$(nproc)}" -E '^test_speculative$|t2i'
  mapfile -t functions < <(build-asan/bin/test_speculative -functions | sed 's/()$//' | grep -vxE 'lossless_methods_reproduce_the_target_distribution|ssd_with_a_round_per_cell_is_exact_on_rows_of_three')
  build-asan/bin/test_speculative "${functions[@]}" >/dev/null ||
    { echo "sanitizer build: test_speculative failed"; build-asan/bin/test_speculative "${functions[@]}" | grep -v PASS; exit 1; }
  echo "sanitizer build: engine and CLI tests passed under AddressSanitizer + UBSan"
  stage_done "tests (AddressSanitizer + UBSan)"
fi

printf "%s\n" "${stage_times[@]}"
