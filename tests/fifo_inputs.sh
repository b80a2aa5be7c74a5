#!/usr/bin/env bash
# Readers of paths a user gives, each handed a FIFO with no writer: every one must refuse it at once, naming it
# ("it is a FIFO"), instead of blocking forever in open(). inspect (a bundle whose manifest is a FIFO), convert
# llamagen (--gpt, --vq), merge, bench --prompts, compare, plot --csv, data emoji --emoji-test. Then a symbolic-link loop: each must say so in its own words, not
# the C++ library's ("filesystem error: status: ..."). Last, folders (a bundle, a VQ or target run) given as a FIFO.
set -uo pipefail
cli=$1
bundle=$2
fixtures=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkfifo "$tmp/fifo"
mkdir "$tmp/bundle" && cp "$bundle"/*.safetensors "$tmp/bundle"/ && mkfifo "$tmp/bundle/speculum.json"
check() {
  local name=$1; shift
  out=$(timeout 20 "$cli" "$@" 2>&1)
  rc=$?
  [ $rc -ne 124 ] || { echo "FAIL: $name hangs on a FIFO"; exit 1; }
  echo "$out" | grep -q "it is a FIFO" || { echo "FAIL: $name: $out"; exit 1; }
  echo "$name: refused ($(echo "$out" | head -1))"
}
check "inspect" inspect "$tmp/bundle"
check "convert --gpt" convert llamagen --gpt "$tmp/fifo" --vq "$fixtures/llamagen/vq_tiny.pt" --out "$tmp/out1"
check "convert --vq" convert llamagen --gpt "$fixtures/llamagen/c2i_tiny.pt" --vq "$tmp/fifo" --set n_head=4 --out "$tmp/out2"
check "merge" merge "$tmp/fifo"
check "bench --prompts" bench --bundle "$bundle" --prompts "$tmp/fifo"
check "compare" compare "$tmp/fifo" "$tmp/fifo"
check "plot --csv" plot --csv "$tmp/fifo" --columns loss --out "$tmp/plot.png"
QT_QPA_PLATFORM=offscreen check "data emoji --emoji-test" data emoji --emoji-test "$tmp/fifo" --out "$tmp/emoji"
[ ! -e "$tmp/out1" ] && [ ! -e "$tmp/out2" ] || { echo "FAIL: a refused conversion left files"; exit 1; }
echo "every reader refused the FIFO"
ln -s "$tmp/loop-b" "$tmp/loop-a" && ln -s "$tmp/loop-a" "$tmp/loop-b"
check_loop() {
  local name=$1; shift
  out=$(timeout 20 "$cli" "$@" 2>&1)
  echo "$out" | grep -qi "too many levels of symbolic links" && ! echo "$out" | grep -q "filesystem error" ||
    { echo "FAIL: $name on a link loop: $out"; exit 1; }
  echo "$name: refused ($(echo "$out" | head -1))"
}
check_loop "inspect" inspect "$tmp/loop-a"
check_loop "generate --bundle" generate --bundle "$tmp/loop-a" --out "$tmp/x.png"
check_loop "merge" merge "$tmp/loop-a"
check_loop "bench --prompts" bench --bundle "$bundle" --prompts "$tmp/loop-a"
echo "every reader named the link loop"
# Folders a command reads (a bundle, a VQ or target run) given as a FIFO: refused at once, naming the file looked for.
check_folder() {
  local name=$1; shift
  out=$(timeout 20 "$cli" "$@" 2>&1)
  rc=$?
  [ $rc -ne 124 ] || { echo "FAIL: $name hangs on a FIFO given as a folder"; exit 1; }
  [ $rc -ne 0 ] && echo "$out" | grep -q "$tmp/fifo/[a-z.]*': Not a directory" || { echo "FAIL: $name: $out"; exit 1; }
  echo "$name: refused ($(echo "$out" | head -1))"
}
check_folder "generate --bundle" generate --bundle "$tmp/fifo" --out "$tmp/y.png"
check_folder "train tokenize --vq" train tokenize --vq "$tmp/fifo" --count 1 --out "$tmp/c.safetensors"
check_folder "train bundle --target" train bundle --vq "$tmp/fifo" --target "$tmp/fifo" --out "$tmp/b"
check_folder "tune --bundle" tune --bundle "$tmp/fifo" --out "$tmp/sizes.json"
[ ! -e "$tmp/b" ] && [ ! -e "$tmp/c.safetensors" ] && [ ! -e "$tmp/sizes.json" ] || { echo "FAIL: a refused command left files"; exit 1; }
# A run folder whose checkpoint state or training log is a FIFO: a resumed trainer refuses it.
"$cli" train samples --bundle "$bundle" --count 2 --out "$tmp/samples.safetensors" --threads 1 > /dev/null
mkdir -p "$tmp/run/checkpoint" && mkfifo "$tmp/run/checkpoint/state.json"
check "train drafter (checkpoint state)" train drafter --bundle "$bundle" --corpus "$tmp/samples.safetensors" --out "$tmp/run" --steps 1
mkdir -p "$tmp/run2" && mkfifo "$tmp/run2/log.csv"
check "train drafter (training log)" train drafter --bundle "$bundle" --corpus "$tmp/samples.safetensors" --out "$tmp/run2" --steps 1
echo "every folder reader refused the FIFO"
