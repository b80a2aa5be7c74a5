#include "decoding/soft_calibration.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>

#include "error.h"
#include "sampling/counter_rng.h"
#include "sampling/distribution.h"

namespace speculum {
namespace {

double quantile(std::vector<double> values, double level) {
  if (values.empty()) throw Error("calibration: no samples");
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(std::clamp(level, 0.0, 1.0) * (values.size() - 1));
  return values[index];
}

// Processed distributions [B, N, V] of teacher-forced `tokens` [B, N] (column i: token i) under one `condition`,
// CFG rows combined.
at::Tensor processed(const Transformer& target, const at::Tensor& tokens, const ConditionPrefix& condition,
                     const SamplingParams& sampling) {
  const auto b = tokens.size(0);
  const std::int64_t rows = sampling.uses_cfg() ? 2 : 1;
  if (condition.embeddings.size(0) < rows) throw Error("calibration: the condition lacks the CFG null row");
  const at::Tensor one = condition.embeddings.narrow(0, 0, rows);  // [rows, L, dim]
  const at::Tensor prefix = one.unsqueeze(1).expand({rows, b, one.size(1), one.size(2)}).reshape({rows * b, one.size(1), one.size(2)});
  const at::Tensor attendable =
      at::tensor(std::vector<std::int64_t>(condition.attendable.begin(), condition.attendable.end()), at::kLong)
          .to(prefix.device(), at::kBool)
          .unsqueeze(0)
          .expand({rows * b, one.size(1)});
  const at::Tensor batch = rows == 2 ? at::cat({tokens, tokens}) : tokens;
  const at::Tensor logits = target.forward_teacher(prefix, attendable, batch);  // [rows·B, N, V]
  const at::Tensor stacked = rows == 2 ? at::stack({logits.narrow(0, 0, b), logits.narrow(0, b, b)}) : logits.unsqueeze(0);
  return target_distribution(stacked.reshape({stacked.size(0), -1, stacked.size(-1)}), sampling)
      .reshape({b, tokens.size(1), stacked.size(-1)});
}

double js_divergence(const at::Tensor& p, const at::Tensor& q) {
  const at::Tensor m = 0.5 * (p + q);
  const auto kl = [&](const at::Tensor& a) {
    return (a * (a.clamp_min(1e-12).log() - m.clamp_min(1e-12).log())).sum().item<double>();
  };
  return 0.5 * kl(p) + 0.5 * kl(q);
}

}  // namespace

SoftVerificationBounds calibrate_soft_verification(const Transformer& target, const at::Tensor& whitened,
                                                   const at::Tensor& images, const std::vector<ConditionPrefix>& conditions,
                                                   const SamplingParams& sampling,
                                                   const SoftCalibrationParams& params) {
  c10::InferenceMode inference;
  const auto n = images.size(1);
  if (n < 3) throw Error("calibration needs grids of at least 3 tokens");
  std::vector<double> shift, emb_raw, logit_raw, gaps;
  for (std::int64_t image = 0; image < images.size(0); ++image) {
    // Each sampled position i: two sequences that differ only at i (t_m or t_d); column i + 1 is the next
    // position's distribution after each, column i the distribution t_m and t_d come from.
    std::vector<std::int64_t> positions;
    for (int j = 0; j < params.positions_per_image; ++j)
      positions.push_back(1 +
                          static_cast<std::int64_t>(counter_uniform(params.seed, RngStream::Data, image, j) * (n - 2)));
    const at::Tensor base = images[image].to(at::kLong);
    const at::Tensor here = processed(target, base.unsqueeze(0), conditions[image], sampling)[0];  // [N, V]
    std::vector<at::Tensor> variants;
    std::vector<std::int64_t> kept;
    std::vector<std::pair<int, int>> top_two;
    for (auto i : positions) {
      const auto [values, indices] = at::topk(here[i], 2);
      if (values[1].item<float>() <= 0) continue;  // a one-token support: no alternative to measure
      const int t_m = static_cast<int>(indices[0].item<std::int64_t>()),
                t_d = static_cast<int>(indices[1].item<std::int64_t>());
      for (int t : {t_m, t_d}) {
        at::Tensor v = base.clone();
        v[i] = t;
        variants.push_back(v);
      }
      kept.push_back(i);
      top_two.emplace_back(t_m, t_d);
    }
    if (kept.empty()) continue;
    const at::Tensor next =
        processed(target, at::stack(variants), conditions[image], sampling);
    for (std::size_t k = 0; k < kept.size(); ++k) {
      const auto i = kept[k];
      const auto [t_m, t_d] = top_two[k];
      const double gap = std::log(here[i][t_m].item<double>()) - std::log(here[i][t_d].item<double>());
      const double g = (whitened[t_d] - whitened[t_m]).pow(2).sum().item<double>();
      shift.push_back(js_divergence(next[2 * k][i + 1], next[2 * k + 1][i + 1]));
      emb_raw.push_back(std::max(g, 1e-12));
      logit_raw.push_back(std::max(gap * gap, 1e-12));
      gaps.push_back(gap);
    }
  }
  const double level = 1 - params.delta;
  std::vector<double> emb_ratio, logit_ratio;
  for (std::size_t k = 0; k < shift.size(); ++k) {
    emb_ratio.push_back(shift[k] / emb_raw[k]);
    logit_ratio.push_back(shift[k] / logit_raw[k]);
  }
  SoftVerificationBounds b;
  b.beta = quantile(emb_ratio, level);
  b.alpha = quantile(logit_ratio, level);
  std::vector<double> estimated;
  for (std::size_t k = 0; k < shift.size(); ++k)
    estimated.push_back(std::min(b.alpha * logit_raw[k], b.beta * emb_raw[k]));
  b.u_bound = quantile(estimated, level);
  b.delta_max = quantile(gaps, level);
  b.confidence_max = params.confidence_max;
  b.samples = static_cast<int>(shift.size());
  return b;
}

}  // namespace speculum
