// The tools that render scenes (OpenCV, full builds): the VQ tokenizer, the tokenised corpus the target trains on,
// the feature network behind bench's Fréchet distance, and a shapes dataset on disk.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/image_batches.h"
#include "data/shapes_render.h"
#include "error.h"
#include "eval/prompt_checker.h"
#include "models/text_vocabulary.h"
#include "models/vq_model.h"
#include "tools/tool_support.h"
#include "train/feature_net_trainer.h"
#include "train/vq_trainer.h"

namespace speculum {

void train_vq_run(const VqTrainRequest& request, const ToolCallbacks& callbacks) {
  const VqConfig& config = request.config;
  validate_config(config);
  if (request.crop < 8 || request.crop > 64 || request.crop % config.downsample_factor() != 0)
    throw Error("VQ crop " + std::to_string(request.crop) + ": must be 8..64 and a multiple of the downsampling factor " +
                std::to_string(config.downsample_factor()));
  at::set_num_threads(request.threads);
  std::filesystem::create_directories(request.out);
  tools::report(callbacks, "VQ: " + std::to_string(parameter_count(vq_tensor_specs(config))) + " parameters, " +
                               std::to_string(request.params.schedule.steps) + " steps of " + std::to_string(request.batch) +
                               " crops of " + std::to_string(request.crop) + " px");
  std::vector<HeldOutImages> held_out = {{"shapes", data::shapes_images(900000000, request.held_out)}};
  const int align = config.downsample_factor();
  const std::uint64_t seed = request.params.seed;
  ImageBatches batches = data::shapes_crop_batches(seed, request.batch, request.crop, align);
  if (!request.emoji.empty()) {
    // Every 16th emoji is held out for PSNR; the rest share each batch half and half with shapes.
    const at::Tensor all = data::load_folder_dataset(request.emoji).images;
    const at::Tensor index = at::arange(0, all.size(0), at::kLong);
    held_out.push_back({"emoji", all.index_select(0, at::arange(0, all.size(0), 16, at::kLong))});
    const at::Tensor keep = index.index_select(0, (index % 16 != 0).nonzero().reshape({-1}));
    batches = data::mixed_batches({data::shapes_crop_batches(seed, request.batch - request.batch / 2, request.crop, align),
                                   data::crop_batches(all.index_select(0, keep), seed + 1, request.batch / 2, request.crop, align)});
  }
  const TensorMap weights = train_vq(config, request.params, request.out, batches, held_out, tools::progress_of(callbacks), callbacks.stop);
  save_tensors(request.out + "/vq.safetensors", weights);
  write_text_atomically(request.out + "/tokenizer.json", tokenizer_section(config, "vq.safetensors").dump(2) + "\n");
  tools::report(callbacks, "wrote " + request.out + "/vq.safetensors");
}

void tokenize_scenes(const TokenizeRequest& request, const ToolCallbacks& callbacks) {
  const int downscale = request.downscale;
  if (downscale != 1 && downscale != 2 && downscale != 4) throw Error("downscale " + std::to_string(downscale) + ": allowed 1, 2, 4");
  for (const std::string& b : request.backgrounds)
    if (b != "flat" && b != "gradient" && b != "noisy" && b != "striped")
      throw Error("background '" + b + "': allowed flat, gradient, noisy, striped");
  for (const std::string& f : request.families)
    if (f != "single" && f != "count" && f != "relation") throw Error("family '" + f + "': allowed single, count, relation");
  const VqConfig config = tools::read_vq_run(request.vq_run);
  const VqModel vq = VqModel::load(config, request.vq_run + "/vq.safetensors", at::kCPU);
  // Word ids: the shapes grammar first, then every new word of the emoji names, in order of appearance.
  std::vector<std::string> words = data::caption_vocabulary();
  data::FolderDataset emoji;
  if (!request.emoji.empty()) {
    emoji = data::load_folder_dataset(request.emoji);
    for (const auto& caption : emoji.captions)
      for (const auto& w : TextVocabulary::split(caption))
        if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  }
  const TextVocabulary vocabulary(words);
  c10::InferenceMode inference;
  TokenizedCorpus corpus;
  corpus.vocabulary = words;
  std::vector<at::Tensor> codes, shares;  // shares: each token cell's object coverage (emoji: none, 0)
  const auto encode = [&](const at::Tensor& images) {
    const at::Tensor scaled = downscale == 1 ? images : at::avg_pool2d(images, {downscale, downscale});
    return vq.encode(scaled).reshape({images.size(0), -1});
  };
  // The scenes' seeds: consecutive from `seed`, less those on a background mode or of a family not asked for.
  const auto kept = [](const std::vector<std::string>& keep, const std::string& name) {
    return keep.empty() || std::find(keep.begin(), keep.end(), name) != keep.end();
  };
  std::vector<std::uint64_t> seeds;
  for (std::uint64_t seed = request.seed; static_cast<int>(seeds.size()) < request.count; ++seed) {
    const data::Scene scene = data::sample_scene(seed);
    if (kept(request.backgrounds, data::mode_name(scene.mode)) && kept(request.families, data::family_name(scene.family)))
      seeds.push_back(seed);
  }
  for (int i = 0; i < request.count; i += 64) {
    const std::vector<std::uint64_t> chunk(seeds.begin() + i, seeds.begin() + std::min(i + 64, request.count));
    codes.push_back(encode(data::shapes_images(chunk)));
    const int side = static_cast<int>(std::lround(std::sqrt(codes.back().size(1))));
    for (std::uint64_t seed : chunk) {
      const data::Scene scene = data::sample_scene(seed);
      corpus.words.push_back(vocabulary.encode(scene.caption()));
      shares.push_back(at::tensor(data::object_share_per_cell(scene, side), at::kFloat).unsqueeze(0));
    }
    if ((i / 64) % 20 == 0)
      tools::report(callbacks, "tokenised " + std::to_string(i + static_cast<int>(chunk.size())) + " / " + std::to_string(request.count));
  }
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(emoji.captions.size()); ++i) {
    if ((i % 16 == 0) != request.emoji_held_out) continue;
    codes.push_back(encode(emoji.images.narrow(0, i, 1)));
    shares.push_back(at::zeros({1, codes.back().size(1)}, at::kFloat));
    corpus.words.push_back(vocabulary.encode(emoji.captions[i]));
  }
  if (codes.empty()) throw Error("tokenize: no images (count " + std::to_string(request.count) + ", no emoji)");
  corpus.codes = at::cat(codes);
  corpus.object_share = at::cat(shares);
  corpus.save(request.out, 16);
  tools::report(callbacks, "wrote " + request.out + " (" + std::to_string(corpus.size()) + " images x " +
                               std::to_string(corpus.codes.size(1)) + " tokens)");
}

void train_feature_net_run(const FeatureNetTrainRequest& request, const ToolCallbacks& callbacks) {
  at::set_num_threads(request.threads);
  std::filesystem::create_directories(request.out);
  tools::report(callbacks, "feature network: " + std::to_string(parameter_count(feature_net_tensor_specs())) + " parameters, " +
                               std::to_string(request.params.schedule.steps) + " steps of " + std::to_string(request.batch) + " scenes");
  // Held out: the VQ's held-out seeds, disjoint from the random 64-bit training seeds and the eval prompts.
  const SceneBatch held_out = data::shapes_scene_batch(900000000, request.held_out);
  const TensorMap weights = train_feature_net(request.params, request.out, data::shapes_scene_batches(request.params.seed, request.batch),
                                              held_out, tools::progress_of(callbacks), callbacks.stop);
  save_tensors(request.out + "/features.safetensors", weights, DType::F32, {{"format", kFeatureNetFormat}});
  tools::report(callbacks, "wrote " + request.out + "/features.safetensors");
}

void write_shapes_dataset(const ShapesDatasetRequest& request, const ToolCallbacks& callbacks) {
  std::filesystem::create_directories(request.out);
  const std::string index = request.out + "/captions.jsonl";
  std::ostringstream lines;
  int written = 0;
  for (int i = 0; i < request.count && !tools::stopped(callbacks); ++i, ++written) {
    const std::uint64_t seed = request.seed + i;
    const data::Scene scene = data::sample_scene(seed);
    char name[32];
    std::snprintf(name, sizeof name, "%08d.png", i);
    eval::write_rgb_png(request.out + "/" + name, data::render_scene(scene));
    lines << nlohmann::json{{"file", name}, {"seed", seed}, {"caption", scene.caption()}, {"family", data::family_name(scene.family)}}.dump()
          << "\n";
  }
  write_text_atomically(index, lines.str());
  tools::report(callbacks, "wrote " + std::to_string(written) + " images and " + index);
}

}  // namespace speculum
