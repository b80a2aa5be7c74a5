// The one home of "activations times a weight matrix" for inference and training: y = x · Wᵀ (+ b).
//
// A decode step multiplies a handful of rows (CFG streams × new tokens) by every matrix of the model, so it is
// bound by reading the weights; a GEMM re-packs the whole matrix on each call and ran such products at a third
// of the machine's bandwidth. Up to kStreamRowsMax rows the product therefore streams the weights once through
// linear_kernels.h, in their stored format; above it (verification passes of many tokens, prompts, training)
// LibTorch's GEMM runs, over f32 blocks converted on the fly for 16- and 8-bit weights.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "models/linear_kernels.h"
#include "models/tensor_io.h"

namespace speculum {

// Rows up to which streaming beats OpenBLAS's GEMM (over converted blocks for 16- and 8-bit weights), in every
// format: measured with `bench --kernels` and GPT-B's `bench --forward-cost` (docs/benchmarks/studies.md).
constexpr int kStreamRowsMax = 32;

// A weight matrix [out, in] in its inference format. F32 shares the tensor it was made from (training updates
// it in place and autograd sees it); the others hold a converted copy.
struct LinearWeight {
  at::Tensor values;  // F32 float, F16 half, BF16 bfloat16, Q8 int8: [out, in]
  at::Tensor scales;  // Q8: float [out, in / kQ8Block]

  bool defined() const { return values.defined(); }
  WeightFormat format() const;  // from the values' type
  std::int64_t out_features() const { return values.size(0); }
  std::int64_t in_features() const { return values.size(1); }
  std::int64_t bytes() const;
  // The weights as float32 [out, in] (a copy unless F32).
  at::Tensor to_float() const;
};

// `w` [out, in] (float32) in `format`. A matrix the format cannot hold stays F32: rows whose length is not a
// multiple of 8 (Q8: of kQ8Block), and any matrix on a CUDA device for Q8 (LibTorch has no 8-bit product).
LinearWeight make_linear_weight(const at::Tensor& w, WeightFormat format);

// x [rows, in] float32 as a product with 8-bit weights sees it: quantised per row and block (quantize_q8_row), in float32.
at::Tensor q8_activations(const at::Tensor& x);

// x [..., in] -> [..., out], float32 for float32 x.
at::Tensor linear(const at::Tensor& x, const LinearWeight& w, const at::Tensor& bias = {});
// The streaming kernels whatever the row count: x [rows, in] float32 on the CPU (what `bench --kernels` compares),
// split by output features across LibTorch's threads (at::parallel_for), which the LibTorch operators around it share.
at::Tensor linear_streamed(const at::Tensor& x, const LinearWeight& w, const at::Tensor& bias = {});
// The same over raw row-major buffers: y [rows, out] = x [rows, in] · Wᵀ (+ bias [out] when not null), w on the
// CPU; split by output features across the step team (models/step_team.h) from kMinTeamWork multiply-adds a part.
// For the one-pass layer step only: the team's helpers spin between products and would take a core from the OpenMP
// threads of LibTorch operators running between them.
void stream_product(const float* x, int rows, const LinearWeight& w, const float* bias, float* y);

}  // namespace speculum
