// Pieces shared by the GPT's blocks and the caption encoder's: the attention mask value, RMSNorm and the
// SwiGLU feed-forward.
#pragma once

#include <ATen/ATen.h>

namespace speculum {

// Additive attention bias of a hidden key. Finite, so a query with no visible key yields a uniform row
// instead of NaN.
constexpr float kMaskedOut = -1e9f;

// x / rms(x) * weight, computed in float32 whatever x's dtype.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// w2 · (silu(w1 · h) ⊙ w3 · h)
at::Tensor swiglu(const at::Tensor& h, const at::Tensor& w1, const at::Tensor& w3, const at::Tensor& w2);

}  // namespace speculum
