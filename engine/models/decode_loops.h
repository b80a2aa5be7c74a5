// The decode step's pieces other than its matrix products, as plain loops over float32 on the CPU. A small
// model's step is otherwise a few hundred LibTorch calls of a few microseconds each. The raw-buffer loops serve
// decoder_layer_step (one whole layer for a decode step's one new token per row); the tensor versions serve the
// LibTorch-shaped path (blocks.cpp, rope.cpp) whenever plain_cpu_floats holds, which keeps LibTorch's own
// operations for gradients and CUDA.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <initializer_list>

#include "models/model_config.h"

namespace speculum {

// Whether these loops may take the tensors: float32 on the CPU, no gradient wanted.
bool plain_cpu_floats(std::initializer_list<const at::Tensor*> tensors);

// y [rows, dim] = x / sqrt(mean(x²) + eps) · weight [dim], row by row (y may be x).
void rms_norm_raw(const float* x, const float* weight, std::int64_t rows, std::int64_t dim, float eps, float* y);
// Rotates, in place, `heads` vectors of hd floats for each of rows × n tokens: token (r, t) starts at
// x + (r · n + t) · token_stride and turns by the (cos, sin) pairs of table row t ([n, hd / 2, 2]).
void rope_raw(float* x, std::int64_t rows, std::int64_t n, std::int64_t token_stride, std::int64_t heads,
              std::int64_t hd, const float* table);

// One new query per CFG row attending to `keys` cached slots, for rows × heads (row, head) pairs.
struct OneQueryAttention {
  int rows = 0, heads = 0, hd = 0, keys = 0;
  const float* queries = nullptr;  // row r's query of head h at queries + r · query_stride + h · hd
  std::int64_t query_stride = 0;
  // Slot s of (r, h) at element r · row_stride + h · head_stride + s · hd of cached_keys (and cached_values), whose
  // elements are cache_format's: F32 or F16.
  const void* cached_keys = nullptr;
  const void* cached_values = nullptr;
  WeightFormat cache_format = WeightFormat::F32;
  std::int64_t row_stride = 0, head_stride = 0;
  const float* bias = nullptr;  // [keys], added to the scaled scores
  float scale = 1.0f;
};
// out [rows, heads · hd]: softmax(q kᵀ · scale + bias) v.
void attend_one_query_raw(const OneQueryAttention& a, float* out);

// gate[i] = silu(gate[i]) · up[i] for i < count.
void silu_gate_raw(float* gate, const float* up, std::int64_t count);

// The tensor versions. x [..., dim] / sqrt(mean(x²) + eps) · weight [dim].
at::Tensor rms_norm_rows(const at::Tensor& x, const at::Tensor& weight, double eps);
// x [rows, N, heads, hd] rotated pairwise by table_rows [N, hd / 2, 2] (cos, sin).
at::Tensor rope_rows(const at::Tensor& x, const at::Tensor& table_rows);
// gate = silu(gate) · up, in place (both contiguous, same shape).
void silu_gate_in_place(at::Tensor& gate, const at::Tensor& up);

}  // namespace speculum
