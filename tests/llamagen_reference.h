// Comparisons with the official LlamaGen code's recorded runs (tests/fixtures/llamagen*/reference.json), shared by
// the c2i and t2i converter tests: teacher-forced log-probabilities and decoded images.
#pragma once

#include <QImage>
#include <c10/core/InferenceMode.h>

#include <nlohmann/json.hpp>
#include <string>

#include "models/transformer.h"
#include "sampling/distribution.h"
#include "speculum.h"

namespace speculum::test {

// The largest |log p| difference between `model` teacher-forced on a recorded run (its tokens, under `condition`
// with the run's CFG scale) and the run's recorded log-probabilities: of every committed token, and of the whole
// first three distributions. The prefix's last output predicts cell 0; token i predicts cell i + 1.
inline double worst_logp_error(const Transformer& model, const ConditionPrefix& condition, const nlohmann::json& run) {
  c10::InferenceMode inference;
  const float cfg = run["cfg_scale"];
  const int rows = cfg > 1 ? 2 : 1;
  const auto tokens = run["tokens"].get<std::vector<std::int64_t>>();
  KVCache cache = model.make_cache(rows, 0);
  ForwardInput prefix;
  prefix.embeddings = condition.embeddings;
  prefix.positions = model.prefix_positions();
  prefix.attendable = condition.attendable;
  prefix.logits_last = 1;
  const at::Tensor first = model.forward(prefix, cache).logits;
  ForwardInput rest;
  rest.tokens = at::tensor(std::vector<std::int64_t>(tokens.begin(), tokens.end() - 1), at::kLong);
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) rest.positions.push_back(model.config().cls_token_num + static_cast<std::int64_t>(i));
  const at::Tensor logits = at::cat({first, model.forward(rest, cache).logits}, 1);  // [rows, tokens, V]
  const at::Tensor logp = at::log_softmax((rows == 2 ? cfg_combine(logits, cfg) : logits[0]).to(at::kDouble), -1);
  const auto expected = run["logp"].get<std::vector<double>>();
  double worst = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    worst = std::max(worst, std::abs(logp[static_cast<std::int64_t>(i)][tokens[i]].item<double>() - expected[i]));
  for (int step = 0; step < 3; ++step) {
    const auto full = run["logsoftmax_first3"][step].get<std::vector<double>>();
    for (std::size_t v = 0; v < full.size(); ++v)
      worst = std::max(worst, std::abs(logp[step][static_cast<std::int64_t>(v)].item<double>() - full[v]));
  }
  return worst;
}

// How many 8-bit values of `image` differ from the official PNG by exactly one level, and by more; -1 for a PNG that
// cannot be read or whose size differs.
struct LevelDifferences {
  int off_by_one = -1;
  int worse = -1;
  int values = 0;
};
inline LevelDifferences compare_with_png(const Image& image, const std::string& png) {
  const QImage expected = QImage(QString::fromStdString(png)).convertToFormat(QImage::Format_RGB888);
  LevelDifferences d;
  if (expected.isNull() || expected.width() != image.width || expected.height() != image.height) return d;
  d.off_by_one = d.worse = 0;
  d.values = image.width * image.height * 3;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width * 3; ++x) {
      const int diff = std::abs(int(image.rgb[static_cast<std::size_t>(y * image.width * 3 + x)]) - int(expected.constScanLine(y)[x]));
      d.off_by_one += diff == 1;
      d.worse += diff > 1;
    }
  return d;
}

}  // namespace speculum::test
