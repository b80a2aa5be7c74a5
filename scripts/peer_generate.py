#!/usr/bin/python3
"""Times the official LlamaGen generate() on CPU for scripts/peer-speed.sh: builds GPT-<size> with the code of a
LlamaGen checkout (nothing of LlamaGen is copied into Speculum), loads a class-conditional checkpoint
({"model": state_dict}), and generates one 256-token image per repeat with CFG and top-k as Speculum's bench does.
Prints one line per repeat: "official <threads> <ms per token>". Needs Debian's python3-torch (1.13); the shims for
it are those listed in ../shared/fixtures/llamagen/README.md (none changes the computation on CPU).

usage: peer_generate.py CHECKOUT CHECKPOINT SIZE THREADS REPEATS CFG TOP_K
"""
import contextlib
import math
import sys
import time
import types

import torch
import torch.nn.functional as F

checkout, checkpoint, size, threads, repeats, cfg, top_k = sys.argv[1:8]
torch.set_num_threads(int(threads))
sys.path.insert(0, checkout)

# torch 1.13 shims: generate.py imports torch 2.0 modules it does not use on CPU, and gpt.py calls
# scaled_dot_product_attention (given here as PyTorch 2.0's documented math definition).
for name in ("torch._dynamo", "torch._dynamo.config", "torch._inductor", "torch._inductor.config"):
    sys.modules.setdefault(name, types.ModuleType(name))


def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if is_causal:
        n, m = q.size(-2), k.size(-2)
        scores = scores.masked_fill(torch.ones(n, m, dtype=torch.bool).tril().logical_not(), float("-inf"))
    if attn_mask is not None:
        scores = scores.masked_fill(attn_mask.logical_not(), float("-inf")) if attn_mask.dtype == torch.bool else scores + attn_mask
    return torch.softmax(scores, dim=-1) @ v


F.scaled_dot_product_attention = scaled_dot_product_attention
torch.backends.cuda.sdp_kernel = lambda **kwargs: contextlib.nullcontext()

import importlib.util  # noqa: E402

spec = importlib.util.spec_from_file_location("llamagen_generate", f"{checkout}/autoregressive/models/generate.py")
source = open(spec.origin).read()
# torch 2.0's default-device context becomes a plain block (the CPU is the default), and the decode position is
# int64 (1.13 refuses int32 index tensors; same value).
source = source.replace("with torch.device(device):", "if True:").replace(
    "input_pos = torch.tensor([T], device=device, dtype=torch.int)", "input_pos = torch.tensor([T], device=device, dtype=torch.long)")
generate_module = types.ModuleType("llamagen_generate")
exec(compile(source, spec.origin, "exec"), generate_module.__dict__)

from autoregressive.models.gpt import GPT_models  # noqa: E402

model = GPT_models[f"GPT-{size.upper()}"](vocab_size=16384, block_size=256, num_classes=1000, cls_token_num=1,
                                            model_type="c2i", resid_dropout_p=0.0, ffn_dropout_p=0.0, token_dropout_p=0.0)
state = torch.load(checkpoint, map_location="cpu")
model.load_state_dict(state.get("model", state), strict=False)
model.eval()
torch.manual_seed(0)
with torch.inference_mode():
    for r in range(int(repeats) + 1):  # the first is a warm-up
        start = time.perf_counter()
        generate_module.generate(model, torch.tensor([207]), 256, cfg_scale=float(cfg), cfg_interval=-1,
                                 temperature=1.0, top_k=int(top_k), top_p=1.0, sample_logits=True)
        ms = (time.perf_counter() - start) * 1000 / 256
        if r > 0:
            print(f"official {threads} {ms:.2f}", flush=True)
