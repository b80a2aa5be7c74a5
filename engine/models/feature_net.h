// The shapes feature network: a small CNN the project trains on its own procedural scenes (speculum-cli train
// features) to name each scene's shapes, colours, background, count and relation. Its 32 penultimate
// features are what the Fréchet distance of `bench` compares (docs/metrics.md), as FID uses Inception's.
// Input: [B, 3, 64, 64] in [-1, 1]. Four 3x3 conv + GroupNorm + ReLU stages (16, 32, 64, 128 channels, the
// first three followed by 2x2 average pooling), global average pooling, a linear layer to the features, and
// a linear head to the attribute logits.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "data/shapes_scene.h"
#include "models/model_config.h"
#include "models/tensor_io.h"

namespace speculum {

inline constexpr int kFeatureNetImageSize = 64;
inline constexpr int kFeatureNetFeatures = 32;
inline constexpr const char* kFeatureNetFormat = "speculum-shapes-features/1";

// What the head predicts: presence of each shape and colour (independent yes/no), and one class each of
// background colour, background mode, caption family, object count (1-4) and relation (none for single and
// count scenes).
struct FeatureNetLabels {
  static constexpr int kPresence = 4 + 8;
  static constexpr int kClassGroups = 5;
  static constexpr int kGroupSizes[kClassGroups] = {4, 4, 3, 4, 5};
  static constexpr int kLogits = kPresence + 4 + 4 + 3 + 4 + 5;
  std::vector<float> presence;  // kPresence values in {0, 1}
  std::vector<int> classes;     // kClassGroups class indices
};
FeatureNetLabels feature_net_labels(const data::Scene& scene);

std::vector<TensorSpec> feature_net_tensor_specs();

class FeatureNet {
 public:
  explicit FeatureNet(TensorMap weights);  // every tensor of feature_net_tensor_specs(), float32 on CPU
  // Throws Error naming the file when it is missing, not a feature network, or shaped otherwise.
  static FeatureNet load(const std::string& path);

  at::Tensor features(const at::Tensor& images) const;   // [B, 32]
  at::Tensor logits(const at::Tensor& features) const;   // [B, kLogits]
  TensorMap& weights() { return weights_; }
  const TensorMap& weights() const { return weights_; }

 private:
  TensorMap weights_;
};

}  // namespace speculum
