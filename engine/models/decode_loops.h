// The decode step's pieces other than its matrix products, as plain loops over float32 on the CPU. A small
// model's step is otherwise a few hundred LibTorch calls of a few microseconds each, so RMSNorm, RoPE, SwiGLU's
// gate and one query's attention run here whenever plain_cpu_floats holds; their callers (blocks.cpp, rope.cpp)
// keep LibTorch's versions for gradients and CUDA.
#pragma once

#include <ATen/ATen.h>

#include <initializer_list>

namespace speculum {

// Whether these loops may take the tensors: float32 on the CPU, no gradient wanted.
bool plain_cpu_floats(std::initializer_list<const at::Tensor*> tensors);

// x [..., dim] / sqrt(mean(x²) + eps) · weight [dim].
at::Tensor rms_norm_rows(const at::Tensor& x, const at::Tensor& weight, double eps);
// x [rows, N, heads, hd] rotated pairwise by table_rows [N, hd / 2, 2] (cos, sin).
at::Tensor rope_rows(const at::Tensor& x, const at::Tensor& table_rows);
// q [rows, heads, 1, hd] over keys and values [rows, heads, L, hd] (rows of hd contiguous floats: the KV cache's
// layout) with a bias [1, L]: softmax(q kᵀ · scale + bias) v as [rows, 1, heads · hd].
at::Tensor attend_one_query_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias,
                                 double scale);
// gate = silu(gate) · up, in place (both contiguous, same shape).
void silu_gate_in_place(at::Tensor& gate, const at::Tensor& up);

}  // namespace speculum
