#!/usr/bin/python3
"""Writes a safetensors file as a torch.save checkpoint the way LlamaGen's training saves one
({"model": state_dict}, zip format), to measure `speculum-cli convert llamagen` on checkpoints of the real
sizes (scripts/llamagen-sizes.sh). Needs Debian's python3-torch and python3-numpy (run it with /usr/bin/python3); a measuring aid, not a project dependency.

usage: safetensors_to_pt.py IN.safetensors OUT.pt [--dtype bf16|f16|f32] [--codebook-used]
"""
import json
import struct
import sys

import numpy as np
import torch

NUMPY = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[begin:end], dtype=NUMPY[info["dtype"]]).reshape(info["shape"])
        tensors[name] = torch.from_numpy(array.astype(np.float32))
    return tensors


def main():
    src, dst = sys.argv[1], sys.argv[2]
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[
        sys.argv[sys.argv.index("--dtype") + 1] if "--dtype" in sys.argv else "f32"]
    state = {k: v.to(dtype) for k, v in read_safetensors(src).items()}
    if "--codebook-used" in sys.argv:  # LlamaGen's VQ registers this training-only buffer
        state["quantize.codebook_used"] = torch.zeros(65536)
    torch.save({"model": state}, dst)


if __name__ == "__main__":
    main()
