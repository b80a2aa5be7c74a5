// One decoder layer for a decode step — one new token per CFG row — as a single pass over raw float32 buffers on
// the CPU. Through LibTorch the same layer is ~25 operator calls (views, copies into the cache, adds, allocations)
// of a few microseconds each: on the default model that overhead was a fifth of the step. decoder_layer takes this
// path when decoder_layer_step_applies holds and LibTorch's otherwise; both compute the same function. Passes of
// several new tokens stay on LibTorch's path: their attention is a product of many rows, which OpenBLAS's GEMM ran
// faster than these loops (docs/benchmarks/studies.md, "One pass per layer").
#pragma once

#include <ATen/ATen.h>

#include "models/blocks.h"
#include "models/kv_cache.h"

namespace speculum {

// Whether decoder_layer_step may take these inputs: everything float32 on the CPU with no gradient wanted, x [rows, 1,
// dim] with rows ≤ kStreamRowsMax, bias [1, keys] (keys: begin + 1 with a cache, else 1).
bool decoder_layer_step_applies(const at::Tensor& x, const DecoderLayer& layer, const at::Tensor& rope,
                                const at::Tensor& bias, const KVCache* cache, int begin);

// decoder_layer's function over those inputs (same arguments).
at::Tensor decoder_layer_step(const at::Tensor& x, const DecoderLayer& layer, int heads, double norm_eps,
                              const at::Tensor& rope, const at::Tensor& bias, KVCache* cache, int cache_layer, int begin);

}  // namespace speculum
