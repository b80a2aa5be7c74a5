#include "sampling/distribution.h"

#include <algorithm>
#include <limits>

#include "error.h"

namespace speculum {

at::Tensor cfg_combine(const at::Tensor& logits, float cfg_scale) {
  const at::Tensor f = logits.to(at::kFloat);
  if (f.size(0) == 1) return f[0];
  const at::Tensor cond = f[0], uncond = f[1];
  return uncond + (cond - uncond) * cfg_scale;
}

at::Tensor processed_probabilities(const at::Tensor& guided_logits, const SamplingParams& params) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  at::Tensor logits = guided_logits.to(at::kFloat) / std::max(params.temperature, 1e-5f);
  const auto vocab = logits.size(-1);
  if (params.top_k > 0) {
    const auto k = std::min<std::int64_t>(params.top_k, vocab);
    const at::Tensor kth = std::get<0>(at::topk(logits, k, -1)).narrow(-1, k - 1, 1);
    logits = logits.masked_fill(logits < kth, kNegInf);
  }
  if (params.top_p < 1.0f) {
    const auto [sorted, order] = at::sort(logits, -1, /*descending=*/true);
    const at::Tensor cumulative = at::softmax(sorted, -1).cumsum(-1);
    at::Tensor remove = cumulative > params.top_p;
    // Shift right so the token that crosses top_p is kept, and the first token always is.
    remove = at::cat({at::zeros_like(remove.narrow(-1, 0, 1)), remove.narrow(-1, 0, vocab - 1)}, -1);
    logits = logits.masked_fill(at::zeros_like(remove).scatter(-1, order, remove), kNegInf);
  }
  return at::softmax(logits, -1);
}

at::Tensor target_distribution(const at::Tensor& logits, const SamplingParams& params) {
  return processed_probabilities(cfg_combine(logits, params.cfg_scale), params);
}

at::Tensor residual_distribution(const at::Tensor& p, const at::Tensor& q) {
  const at::Tensor diff = (p.to(at::kFloat) - q.to(at::kFloat)).clamp_min(0);
  const at::Tensor mass = diff.sum(-1, true);
  return at::where(mass > 0, diff / mass.clamp_min(1e-30), p.to(at::kFloat));
}

int draw_token(const at::Tensor& probabilities, double u) {
  const at::Tensor row = probabilities.to(at::kCPU, at::kDouble).contiguous().reshape({-1});
  const double* p = row.data_ptr<double>();
  const auto n = row.numel();
  double total = 0;
  for (std::int64_t i = 0; i < n; ++i) total += p[i];
  if (!(total > 0)) throw Error("cannot sample from a distribution with no mass");
  const double target = u * total;
  double cumulative = 0;
  std::int64_t last_positive = -1;
  for (std::int64_t i = 0; i < n; ++i) {
    if (p[i] <= 0) continue;
    cumulative += p[i];
    last_positive = i;
    if (target < cumulative) return static_cast<int>(i);
  }
  return static_cast<int>(last_positive);  // u * total rounded up to the total
}

}  // namespace speculum
