#!/usr/bin/env bash
# Issue 31's table, re-measured with the project's own defences: the malformed corpus (tests/malformed/, one file per
# case) through test_malformed, the special-file sweep (tests/fifo_inputs.sh), and the CLI's refusal tests. Prints,
# per class, how many cases ended in a clean error naming the file or field, and how many did not (a crash, a hang,
# an accepted wrong input, or a message the test does not recognise). The fuzzers' counts come from scripts/fuzz.sh.
#   bash scripts/hardening-table.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
QT_QPA_PLATFORM=offscreen OMP_WAIT_POLICY=PASSIVE timeout 600 "$build/bin/test_malformed" > "$tmp/malformed.txt" 2>&1
echo "| class (malformed corpus, tests/malformed/) | cases | clean errors | other outcomes |"
echo "|---|---|---|---|"
for dir in tests/malformed/*/; do
  class=$(basename "$dir")
  cases=$(find "$dir" -maxdepth 1 -type f | wc -l)
  clean=$(grep -c "^PASS   : TestMalformed::every_case_gives_a_clean_error($class/" "$tmp/malformed.txt")
  echo "| $class | $cases | $clean | $((cases - clean)) |"
done
window=$(grep -c "^PASS   : TestMalformed::the_window_refuses_every_malformed_trace" "$tmp/malformed.txt")
echo "| traces, opened in the window (offscreen) | $(find tests/malformed/traces -type f | wc -l) | $([ "$window" = 1 ] && echo all || echo 'not all') | — |"
bash tests/fifo_inputs.sh "$build/bin/speculum-cli" "$build/tests/bundles/tiny-text" tests/fixtures > "$tmp/fifo.txt" 2>&1
echo "| special files as inputs (tests/fifo_inputs.sh: FIFOs, link loops, FIFOs as folders) | $(grep -c ": refused (" "$tmp/fifo.txt") | $(grep -c ": refused (" "$tmp/fifo.txt") | $(grep -c "^FAIL" "$tmp/fifo.txt") |"
echo "| bench results (test_bench_records: refusal assertions) | $(grep -cE "QVERIFY\((refused|test::throws_error_containing)\(" tests/test_bench_records.cpp) | run by ctest | — |"
refusals=$(ctest --test-dir "$build" -N -L cli 2>/dev/null | grep -cE "cli_(unknown|bad|missing|bench_(bad|empty|zero|unknown|unwritable|control)|sweep_(unknown|out_of|unwritable)|generate_empty|threads_capped|convert_(null|grid)|outputs_refuse|compare_not)")
echo "| flags and outputs (CTest refusal cases: cli_unknown_*, cli_bad_*, cli_bench_bad_*, cli_outputs_refuse_special_files, ...) | $refusals | run by ctest | — |"
