#include "models/feature_net.h"

#include <algorithm>

#include "error.h"
#include "io/bundle.h"

namespace speculum {
namespace {

constexpr int kChannels[] = {16, 32, 64, 128};
constexpr int kGroups = 8;

}  // namespace

FeatureNetLabels feature_net_labels(const data::Scene& scene) {
  FeatureNetLabels labels;
  labels.presence.assign(FeatureNetLabels::kPresence, 0.0f);
  for (const auto& object : scene.objects) {
    labels.presence[static_cast<int>(object.shape)] = 1;
    labels.presence[4 + static_cast<int>(object.color)] = 1;
  }
  const int count = std::clamp(static_cast<int>(scene.objects.size()), 1, 4);
  labels.classes = {static_cast<int>(scene.background), static_cast<int>(scene.mode), static_cast<int>(scene.family), count - 1,
                    scene.family == data::Family::Relation ? 1 + static_cast<int>(scene.relation) : 0};
  return labels;
}

std::vector<TensorSpec> feature_net_tensor_specs() {
  std::vector<TensorSpec> specs;
  int in = 3;
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    specs.push_back({"conv" + n + ".weight", {kChannels[i], in, 3, 3}});
    specs.push_back({"conv" + n + ".bias", {kChannels[i]}});
    specs.push_back({"norm" + n + ".weight", {kChannels[i]}});
    specs.push_back({"norm" + n + ".bias", {kChannels[i]}});
    in = kChannels[i];
  }
  specs.push_back({"features.weight", {kFeatureNetFeatures, in}});
  specs.push_back({"features.bias", {kFeatureNetFeatures}});
  specs.push_back({"head.weight", {FeatureNetLabels::kLogits, kFeatureNetFeatures}});
  specs.push_back({"head.bias", {FeatureNetLabels::kLogits}});
  return specs;
}

FeatureNet::FeatureNet(TensorMap weights) : weights_(std::move(weights)) {
  for (const auto& spec : feature_net_tensor_specs()) find_tensor(weights_, spec.name, "feature network");
}

FeatureNet FeatureNet::load(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  const auto format = file.metadata().find("format");
  if (format == file.metadata().end() || format->second != kFeatureNetFormat)
    throw Error("'" + path + "' is not a shapes feature network (metadata format is not '" + kFeatureNetFormat + "')");
  return FeatureNet(load_tensors(file, feature_net_tensor_specs(), at::kCPU));
}

at::Tensor FeatureNet::features(const at::Tensor& images) const {
  if (images.dim() != 4 || images.size(1) != 3 || images.size(2) != kFeatureNetImageSize || images.size(3) != kFeatureNetImageSize)
    throw Error("feature network: expected images [B, 3, 64, 64], got " + c10::str(images.sizes()));
  at::Tensor x = images;
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    x = at::conv2d(x, weights_.at("conv" + n + ".weight"), weights_.at("conv" + n + ".bias"), 1, 1);
    x = at::relu(at::group_norm(x, kGroups, weights_.at("norm" + n + ".weight"), weights_.at("norm" + n + ".bias")));
    if (i < 3) x = at::avg_pool2d(x, 2);
  }
  return at::linear(x.mean({2, 3}), weights_.at("features.weight"), weights_.at("features.bias"));
}

at::Tensor FeatureNet::logits(const at::Tensor& features) const {
  return at::linear(features, weights_.at("head.weight"), weights_.at("head.bias"));
}

}  // namespace speculum
