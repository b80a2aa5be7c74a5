#include "decoding/acceptance.h"

#include <algorithm>
#include <cmath>

namespace speculum {

double strict_acceptance(double p_x, double q_x) {
  return q_x <= 0 ? 1.0 : std::min(1.0, p_x / q_x);
}

Probabilities remove_tokens(Probabilities p, const std::vector<int>& tokens) {
  const Probabilities original = p;
  for (int t : tokens) p[t] = 0;
  double mass = 0;
  for (float v : p) mass += v;
  if (!(mass > 0)) return original;
  for (float& v : p) v = static_cast<float>(v / mass);
  return p;
}

double neighbourhood_probability(std::span<const float> prob, int x, const int* nearest, int k) {
  double pooled = prob[x];
  for (int i = 0; i < k; ++i) pooled += prob[nearest[i]];
  return pooled;
}

PooledProbability lantern_pool(std::span<const float> prob, int x, const int* nearest, int k, double delta,
                               double lambda) {
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

SoftScore lisa_soft_score(std::span<const float> prob, int x, const at::Tensor& whitened,
                          const SoftVerificationBounds& b, double budget_left) {
  const int mode = static_cast<int>(std::max_element(prob.begin(), prob.end()) - prob.begin());
  SoftScore s;
  s.confidence = prob[mode];
  s.delta = prob[x] > 0 ? std::log(prob[mode]) - std::log(prob[x]) : INFINITY;
  const auto d = whitened.size(1);
  const float* codes = whitened.data_ptr<float>();
  for (std::int64_t i = 0; i < d; ++i) {
    const double diff = codes[x * d + i] - codes[mode * d + i];
    s.g += diff * diff;
  }
  s.u = std::min(b.alpha * s.delta * s.delta, b.beta * s.g);
  s.score = b.u_bound > 0 ? 1.0 - s.u / b.u_bound : (s.u == 0 ? 1.0 : -INFINITY);
  // A token outside the target's support (top-k / top-p cut) is never accepted.
  s.accept = prob[x] > 0 && s.u <= b.u_bound && s.delta <= b.delta_max && s.confidence <= b.confidence_max &&
             s.delta <= budget_left;
  return s;
}

}  // namespace speculum
