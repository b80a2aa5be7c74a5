#!/usr/bin/env bash
# Makes what scripts/gpu-session.sh takes to a lent GPU machine that has PyTorch, CMake and a compiler but none of
# Speculum's other build dependencies and no network:
#   .device/deps/usr     Debian's spdlog, fmt, CLI11, nlohmann-json and sentencepiece packages, unpacked (dpkg -x)
#   .device/init         where scripts/train-gpu.sh's continued run starts: the last GPU run's end
#                        (resources/training/target-gpu: its manifest and EMA weights, 15 MB)
#   .device/data.tar.xz  the training data of scripts/train-gpu.sh: the pilots' tokenizer manifest, held-out set and
#                        corpora (scripts/default-model-pilots.sh data makes them; 66,278 images, ~10 MB packed)
# .device/ stays out of git (.git/info/exclude) and travels as a carried path. The lending tool takes at most 64 MB
# of working tree: leave the checkpoints and docs behind while the command runs, and restore them after:
#   git rm -r --cached -q resources/training docs && printf '/resources/training/\n/docs/\n' >> .git/info/exclude
#   ... the device command: SECONDS_TOTAL=530 bash scripts/gpu-session.sh "$OUT", carrying .device ...
#   git reset -q resources/training docs && sed -i '\#^/resources/training/$#d; \#^/docs/$#d' .git/info/exclude
set -euo pipefail
cd "$(dirname "$0")/.."
P=runs/p29
mkdir -p .device
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
if [ ! -d .device/deps/usr ]; then
  debs=$(mktemp -d)
  (cd "$debs" && apt-get download libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 nlohmann-json3-dev libcli11-dev \
    libsentencepiece-dev libsentencepiece0)
  for f in "$debs"/*.deb; do dpkg -x "$f" .device/deps; done
  find .device/deps -name '*.a' -delete  # the shared libraries are what links
  rm -rf .device/deps/usr/share/doc "$debs"
fi
mkdir -p .device/init/checkpoint
cp resources/training/target-gpu/speculum.json .device/init/
cp resources/training/target-gpu/checkpoint/ema.safetensors .device/init/checkpoint/
corpora=(corpus-00 corpus-01 corpus-a corpus-b corpus-c corpus-d corpus-g100000 corpus-g110000)
for c in "${corpora[@]}" held-out; do
  [ -f "$P/$c.safetensors" ] || { echo "missing $P/$c.safetensors: run bash scripts/default-model-pilots.sh data" >&2; exit 1; }
done
tar -C "$P" -cf - vq/tokenizer.json held-out.safetensors "${corpora[@]/%/.safetensors}" | xz -6 -T2 > .device/data.tar.xz.partial
mv .device/data.tar.xz.partial .device/data.tar.xz
du -sh .device/deps .device/init .device/data.tar.xz
