#include "models/blocks.h"

namespace speculum {

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::Tensor xf = x.to(at::kFloat);
  return (xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps)).to(x.scalar_type()) * weight;
}

at::Tensor swiglu(const at::Tensor& h, const at::Tensor& w1, const at::Tensor& w3, const at::Tensor& w2) {
  return at::linear(at::silu(at::linear(h, w1)) * at::linear(h, w3), w2);
}

}  // namespace speculum
