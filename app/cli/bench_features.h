// bench's Fréchet distance inputs (full builds): the shapes feature network's features of each generated
// image, and of the reference data — the tokenizer's reconstructions of the held-out scenes that builtin:N
// prompts were written from (docs/metrics.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/feature_net.h"
#include "speculum.h"

namespace speculum::cli {

class BenchFeatures {
 public:
  // The network at `path`; nothing (with a note on stderr) when there is no file there.
  static std::optional<BenchFeatures> load(const std::string& path);

  // Empty unless the image is 64x64; values rounded to 1e-4 (what the result file keeps).
  std::vector<float> of(const Image& image) const;

  // The features of scenes first_seed .. first_seed + count - 1: their renders reconstructed by the tokenizer
  // of the bundle at `bundle_dir`, or the renders themselves when it is empty.
  std::vector<std::vector<float>> of_scenes(std::uint64_t first_seed, int count, const std::string& bundle_dir) const;

 private:
  explicit BenchFeatures(FeatureNet net) : net_(std::move(net)) {}
  FeatureNet net_;
};

}  // namespace speculum::cli
