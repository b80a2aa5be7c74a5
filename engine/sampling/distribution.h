// Processed distributions: CFG, temperature, top-k, top-p, softmax, residuals and seeded draws.
// All probability math is float32 on the model's device, cumulative sums for draws in float64.
#pragma once

#include <ATen/ATen.h>

#include "sampling/sampling_params.h"

namespace speculum {

// logits [rows, N, V] (row 0 cond, row 1 uncond when present) -> guided logits [N, V] float32.
at::Tensor cfg_combine(const at::Tensor& logits, float cfg_scale);

// Guided logits [N, V] -> probabilities [N, V] after temperature, top-k and top-p (LlamaGen order).
at::Tensor processed_probabilities(const at::Tensor& guided_logits, const SamplingParams& params);

// Both at once: model logits [rows, N, V] -> p [N, V].
at::Tensor target_distribution(const at::Tensor& logits, const SamplingParams& params);

// norm(max(0, p - q)) row-wise; rows where p <= q everywhere fall back to p.
at::Tensor residual_distribution(const at::Tensor& p, const at::Tensor& q);

// Inverse-CDF draw from one row of probabilities (any device, any float dtype) with u in [0, 1).
int draw_token(const at::Tensor& probabilities, double u);

}  // namespace speculum
