// Trains the shapes feature network (models/feature_net.h) on fresh procedural scenes: binary cross-entropy
// on shape and colour presence, cross-entropy on background, mode, family, count and relation. Half of each
// batch is blurred a little and all of it gets faint noise, so that the features also hold for the
// tokenizer's softer reconstructions. Resumes from `<run_dir>/checkpoint`.
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "data/shapes_scene.h"
#include "models/feature_net.h"
#include "train/training_run.h"

namespace speculum {

struct SceneBatch {
  at::Tensor images;  // [B, 3, 64, 64] in [-1, 1]
  std::vector<data::Scene> scenes;
};
using SceneBatches = std::function<SceneBatch(int step)>;  // deterministic per step

// The training loss on a batch (exposed for the "a step lowers the loss" test).
at::Tensor feature_net_loss(const FeatureNet& net, const SceneBatch& batch);

// Held-out accuracy: the share of presence bits and class groups predicted right, and the share of scenes
// with every one of them right.
struct FeatureNetFit {
  double accuracy = 0, exact = 0;
};
FeatureNetFit feature_net_fit(const FeatureNet& net, const SceneBatch& held_out);

TensorMap train_feature_net(const FeatureNetTrainParams& params, const std::string& run_dir, const SceneBatches& batches,
                            const SceneBatch& held_out, const ProgressLine& progress, const std::atomic<bool>* stop = nullptr);

}  // namespace speculum
