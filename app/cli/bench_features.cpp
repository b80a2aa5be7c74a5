#include "cli/bench_features.h"

#include <c10/core/InferenceMode.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "data/image_batches.h"
#include "data/shapes_render.h"
#include "io/bundle.h"
#include "models/vq_model.h"

namespace speculum::cli {
namespace {

std::vector<float> rounded(const at::Tensor& row) {
  std::vector<float> out(static_cast<std::size_t>(row.numel()));
  const at::Tensor contiguous = row.contiguous();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::round(contiguous.data_ptr<float>()[i] * 1e4f) / 1e4f;
  return out;
}

}  // namespace

std::optional<BenchFeatures> BenchFeatures::load(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    std::cerr << "bench: no feature network at '" << path << "' (scripts/train-features.sh makes it): no Fréchet distance\n";
    return std::nullopt;
  }
  return BenchFeatures(FeatureNet::load(path));
}

std::vector<float> BenchFeatures::of(const Image& image) const {
  if (image.width != kFeatureNetImageSize || image.height != kFeatureNetImageSize) return {};
  c10::InferenceMode inference;
  const cv::Mat rgb(image.height, image.width, CV_8UC3, const_cast<std::uint8_t*>(image.rgb.data()));
  return rounded(net_.features(data::image_to_tensor(rgb).unsqueeze(0))[0]);
}

std::vector<std::vector<float>> BenchFeatures::of_scenes(std::uint64_t first_seed, int count, const std::string& bundle_dir) const {
  std::optional<VqModel> tokenizer;
  if (!bundle_dir.empty()) {
    const BundleManifest manifest = read_manifest(bundle_dir);
    tokenizer = VqModel::load(manifest.tokenizer, manifest.tokenizer_path(), at::kCPU);
  }
  c10::InferenceMode inference;
  std::vector<std::vector<float>> out;
  for (int i = 0; i < count; ++i) {
    const cv::Mat render = data::render_scene(data::sample_scene(first_seed + static_cast<std::uint64_t>(i)));
    const cv::Mat image = tokenizer ? data::reconstruct(*tokenizer, render) : render;
    out.push_back(rounded(net_.features(data::image_to_tensor(image).unsqueeze(0))[0]));
  }
  return out;
}

}  // namespace speculum::cli
