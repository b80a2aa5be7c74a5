#include "decoding/acceptance.h"

#include <algorithm>
#include <cmath>

namespace speculum {

double strict_acceptance(double p_x, double q_x) {
  return q_x <= 0 ? 1.0 : std::min(1.0, p_x / q_x);
}

at::Tensor remove_tokens(const at::Tensor& p, const std::vector<int>& tokens) {
  at::Tensor out = p.clone();
  for (int t : tokens) out[t] = 0;
  const double mass = out.sum().item<double>();
  return mass > 0 ? out / mass : p;
}

PooledProbability lantern_pool(const at::Tensor& p, int x, const int* nearest, int k, double delta, double lambda) {
  const at::Tensor row = p.to(at::kCPU, at::kFloat).contiguous();
  const float* prob = row.data_ptr<float>();
  PooledProbability out;
  out.p_tilde = prob[x];
  const double budget = lambda > 1 ? (lambda - 1) * prob[x] : delta;
  double cumulative = 0;
  for (int j = 0; j < k; ++j) {
    const double next = cumulative + prob[nearest[j]];
    if (next > budget) break;  // the last prefix whose cumulative mass stays within the budget
    cumulative = next;
    out.neighbours.push_back(nearest[j]);
  }
  out.pooled = cumulative;
  out.p_tilde += cumulative;
  return out;
}

SoftScore lisa_soft_score(const at::Tensor& p, int x, const at::Tensor& whitened, const SoftVerificationBounds& b,
                          double budget_left) {
  const at::Tensor row = p.to(at::kCPU, at::kFloat).contiguous();
  const float* prob = row.data_ptr<float>();
  const int mode = static_cast<int>(row.argmax().item<std::int64_t>());
  SoftScore s;
  s.confidence = prob[mode];
  s.delta = prob[x] > 0 ? std::log(prob[mode]) - std::log(prob[x]) : INFINITY;
  s.g = (whitened[x] - whitened[mode]).pow(2).sum().item<double>();
  s.u = std::min(b.alpha * s.delta * s.delta, b.beta * s.g);
  s.score = b.u_bound > 0 ? 1.0 - s.u / b.u_bound : (s.u == 0 ? 1.0 : -INFINITY);
  // A token outside the target's support (top-k / top-p cut) is never accepted.
  s.accept = prob[x] > 0 && s.u <= b.u_bound && s.delta <= b.delta_max && s.confidence <= b.confidence_max &&
             s.delta <= budget_left;
  return s;
}

}  // namespace speculum
