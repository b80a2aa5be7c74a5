#!/usr/bin/env bash
# LlamaGen's real sizes on this machine. For GPT-B and GPT-XL (random weights of the real shapes, 256 px, the
# ds16 VQ): writes them as torch.save checkpoints the way LlamaGen saves them, converts them with
# `speculum-cli convert llamagen` (wall time, peak resident memory), checks every converted tensor equals the
# original, then measures B (ms per image and per token, forward cost of 1..64 new tokens beside the default
# model's) and XL (ms per token, peak resident memory while generating). Writing the .pt files needs Debian's
# python3-torch and python3-numpy; nothing else here does. Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${CLI:-build/bin/speculum-cli}
work=${WORK:-runs/llamagen-sizes}
py=/usr/bin/python3
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$work"
for size in b xl; do
  random=$work/random-$size
  [ -f "$random/speculum.json" ] || $cli init-random --out "$random" --preset llamagen-$size --condition class --no-drafters
  gpt=$work/c2i_${size^^}_256.pt
  [ -f "$gpt" ] || $py scripts/safetensors_to_pt.py "$random/target.safetensors" "$gpt"
  [ -f "$work/vq_ds16_c2i.pt" ] || $py scripts/safetensors_to_pt.py "$random/vq.safetensors" "$work/vq_ds16_c2i.pt" --codebook-used
  rm -rf "$work/converted-$size"
  /usr/bin/time -f "convert $size: %e s wall, peak RSS %M KB" \
    $cli convert llamagen --gpt "$gpt" --vq "$work/vq_ds16_c2i.pt" --out "$work/converted-$size"
  $py - "$random" "$work/converted-$size" <<'PY'
import json, struct, sys
def tensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8)); header = json.loads(f.read(n)); data = f.read()
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items() if k != "__metadata__"}
for name in ("target.safetensors", "vq.safetensors"):
    a, b = tensors(f"{sys.argv[1]}/{name}"), tensors(f"{sys.argv[2]}/{name}")
    assert a.keys() == b.keys() and all(a[k] == b[k] for k in a), name
    print(f"{name}: {len(a)} tensors, byte-equal to the original")
PY
done
echo "== forward cost, default model and GPT-B (one thread, then two)"
for threads in 1 2; do
  $cli bench --forward-cost --threads $threads
  $cli bench --forward-cost --threads $threads --bundle "$work/converted-b"
done
echo "== GPT-B, 256 px, CFG 4, top-k 2000 (the converted bundle's sampling)"
for threads in 1 2; do
  $cli bench --bundle "$work/converted-b" --methods ar,sjd --seeds 3 --warmup 1 --threads $threads --prompt "golden retriever"
done
echo "== GPT-B: one image, peak resident memory"
/usr/bin/time -f "generate b: %e s wall, peak RSS %M KB" \
  $cli generate --bundle "$work/converted-b" --prompt "golden retriever" --threads 2 --out "$work/golden-retriever-b.png"
echo "== GPT-XL: one image, peak resident memory"
/usr/bin/time -f "generate xl: %e s wall, peak RSS %M KB" \
  $cli bench --bundle "$work/converted-xl" --methods ar --seeds 1 --warmup 0 --threads 2 --prompt "golden retriever"
