// The tools that judge images (OpenCV, full builds): the prompt checker on images and on ground truth, the
// target's next-token entropy on flat and textured cells, and the Fréchet distance's features.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "data/image_batches.h"
#include "data/shapes_render.h"
#include "error.h"
#include "eval/prompt_checker.h"
#include "models/feature_net.h"
#include "models/vq_model.h"
#include "tools/tool_support.h"

namespace speculum {
namespace {

cv::Mat as_mat(const Image& image) {
  if (image.width <= 0 || image.height <= 0 || image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * 3)
    throw Error("image of " + std::to_string(image.width) + "x" + std::to_string(image.height) + " with " +
                std::to_string(image.rgb.size()) + " bytes is not packed RGB");
  return cv::Mat(image.height, image.width, CV_8UC3, const_cast<std::uint8_t*>(image.rgb.data()));
}

std::vector<float> rounded(const at::Tensor& row) {
  std::vector<float> out(static_cast<std::size_t>(row.numel()));
  const at::Tensor contiguous = row.contiguous();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::round(contiguous.data_ptr<float>()[i] * 1e4f) / 1e4f;
  return out;
}

std::optional<VqModel> tokenizer_of(const std::string& bundle_dir) {
  if (bundle_dir.empty()) return std::nullopt;
  const BundleManifest m = read_manifest(bundle_dir);
  return VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU);
}

}  // namespace

eval::CheckReport check_image(const Image& image, const eval::ParsedPrompt& prompt) { return eval::check_image(as_mat(image), prompt); }

std::optional<bool> shapes_checker_verdict(const std::string& prompt, const Image& image) {
  eval::ParsedPrompt parsed;
  try {
    parsed = eval::parse_shapes_prompt(prompt);
  } catch (const Error&) {
    return std::nullopt;
  }
  return check_image(image, parsed).passed();
}

Image read_image_file(const std::string& path) {
  const cv::Mat rgb = eval::read_rgb_image(path);
  Image image;
  image.width = rgb.cols;
  image.height = rgb.rows;
  image.rgb.resize(static_cast<std::size_t>(rgb.cols) * rgb.rows * 3);
  for (int y = 0; y < rgb.rows; ++y) std::memcpy(image.rgb.data() + static_cast<std::size_t>(y) * rgb.cols * 3, rgb.ptr(y), rgb.cols * 3);
  return image;
}

GroundTruthCheckReport check_ground_truth(const GroundTruthCheckRequest& request) {
  const std::optional<VqModel> tokenizer = tokenizer_of(request.through_tokenizer);
  c10::InferenceMode inference;
  std::map<std::string, PassCount> by_claim, by_family;
  GroundTruthCheckReport out;
  for (int i = 0; i < request.count; ++i) {
    const std::uint64_t seed = request.first_seed + i;
    const data::Scene scene = data::sample_scene(seed);
    const std::string caption = scene.caption();
    const cv::Mat rendered = data::render_scene(scene);
    const eval::CheckReport report =
        eval::check_image(tokenizer ? data::reconstruct(*tokenizer, rendered) : rendered, eval::parse_shapes_prompt(caption));
    for (const auto& c : report.claims) {
      PassCount& k = by_claim[eval::claim_kind_name(c.kind)];
      k.passed += c.passed;
      ++k.total;
      if (!c.passed && out.misses.size() < 20) out.misses.push_back("seed " + std::to_string(seed) + " \"" + caption + "\": " + c.failure());
    }
    for (const std::string& family : {std::string(data::family_name(scene.family)), std::string("all")}) {
      PassCount& f = by_family[family];
      f.passed += report.passed();
      ++f.total;
    }
  }
  out.by_family.assign(by_family.begin(), by_family.end());
  out.by_claim.assign(by_claim.begin(), by_claim.end());
  return out;
}

EntropyReport measure_entropy(const EntropyRequest& request) {
  at::set_num_threads(request.threads);
  c10::InferenceMode inference;
  const BundleManifest m = read_manifest(request.bundle);
  if (m.target.condition != ConditionKind::Text) throw Error("entropy needs a text-conditioned bundle ('" + m.dir + "')");
  const Transformer model(m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), at::kCPU), at::kCPU);
  const TokenizedCorpus corpus = TokenizedCorpus::load(request.held_out);
  if (corpus.size() < request.count)
    throw Error("'" + request.held_out + "' has " + std::to_string(corpus.size()) + " images, count asks for " + std::to_string(request.count));
  const int rows = m.target.grid_rows, cols = m.target.grid_cols;
  if (corpus.codes.size(1) != rows * cols)
    throw Error("'" + request.held_out + "' has " + std::to_string(corpus.codes.size(1)) + " tokens per image, the bundle's grid has " +
                std::to_string(rows * cols));
  struct Sum {
    double sum = 0;
    long count = 0;
    void add(double v) { sum += v, ++count; }
    EntropyReport::Mean mean() const { return {count ? sum / count : 0, count}; }
  };
  Sum flat, textured, middle, all;
  for (int first = 0; first < request.count; first += 16) {
    const int n = std::min(16, request.count - first);
    std::vector<std::int64_t> indices;
    for (int i = 0; i < n; ++i) indices.push_back(first + i);
    const at::Tensor entropy = next_token_entropy(model, corpus, indices);                               // [n, rows*cols]
    const at::Tensor images = (data::shapes_images(request.scene_seed + first, n) + 1) * 127.5;       // [n, 3, H, W]
    const int patch = static_cast<int>(images.size(2)) / rows;
    const at::Tensor patches = images.reshape({n, 3, rows, patch, cols, patch}).permute({0, 2, 4, 1, 3, 5}).reshape({n, rows * cols, 3, -1});
    const at::Tensor patch_std = patches.std(-1, /*unbiased=*/false).mean(-1);  // [n, rows*cols]
    const auto e = entropy.accessor<float, 2>();
    const auto s = patch_std.accessor<float, 2>();
    for (int i = 0; i < n; ++i)
      for (int t = 0; t < rows * cols; ++t) {
        all.add(e[i][t]);
        (s[i][t] < request.flat_below ? flat : s[i][t] > request.textured_above ? textured : middle).add(e[i][t]);
      }
  }
  return {flat.mean(), textured.mean(), middle.mean(), all.mean(), std::log(double(m.target.vocab_size))};
}

static_assert(FeatureExtractor::kImageSize == kFeatureNetImageSize);

struct FeatureExtractor::Impl {
  FeatureNet net;
};

FeatureExtractor::FeatureExtractor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FeatureExtractor::~FeatureExtractor() = default;
FeatureExtractor::FeatureExtractor(FeatureExtractor&&) noexcept = default;
FeatureExtractor& FeatureExtractor::operator=(FeatureExtractor&&) noexcept = default;

std::optional<FeatureExtractor> FeatureExtractor::load(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  return FeatureExtractor(std::make_unique<Impl>(Impl{FeatureNet::load(path)}));
}

std::vector<float> FeatureExtractor::of(const Image& image) const {
  if (image.width != kImageSize || image.height != kImageSize) return {};
  c10::InferenceMode inference;
  return rounded(impl_->net.features(data::image_to_tensor(as_mat(image)).unsqueeze(0))[0]);
}

std::vector<std::vector<float>> FeatureExtractor::of_scenes(std::uint64_t first_seed, int count, const std::string& bundle_dir) const {
  const std::optional<VqModel> tokenizer = tokenizer_of(bundle_dir);
  c10::InferenceMode inference;
  std::vector<std::vector<float>> out;
  for (int i = 0; i < count; ++i) {
    const cv::Mat render = data::render_scene(data::sample_scene(first_seed + static_cast<std::uint64_t>(i)));
    const cv::Mat image = tokenizer ? data::reconstruct(*tokenizer, render) : render;
    out.push_back(rounded(impl_->net.features(data::image_to_tensor(image).unsqueeze(0))[0]));
  }
  return out;
}

}  // namespace speculum
