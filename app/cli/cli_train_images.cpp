// speculum-cli train vq | tokenize | features: the project's own VQ tokenizer on the shapes data, the tokenised
// corpus the target trains on, and the feature network behind bench's Fréchet distance. They render scenes, so they need OpenCV (absent from SPECULUM_ENGINE_ONLY builds).
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli_options.h"
#include "cli/train_shared.h"
#include "data/image_batches.h"
#include "data/shapes_render.h"
#include "data/shapes_scene.h"
#include "io/atomic_file.h"
#include "io/bundle.h"
#include "models/text_vocabulary.h"
#include "models/vq_model.h"
#include "train/feature_net_trainer.h"
#include "train/target_trainer.h"
#include "train/vq_trainer.h"

namespace speculum::cli {

void add_image_training_commands(CLI::App& train) {
  struct VqArgs {
    std::string out;
    VqConfig config;
    VqTrainParams params;
    int batch = 32;
    int crop = 32;
    int held_out = 256;
    int threads = 2;
    std::string emoji;
  };
  auto a = std::make_shared<VqArgs>();
  a->config.codebook_size = 1024;
  a->config.codebook_dim = 8;
  a->config.ch = 48;
  a->config.ch_mult = {1, 1, 2};
  a->config.z_channels = 64;
  a->config.num_res_blocks = 1;
  a->config.norm_groups = 16;
  CLI::App* vq = train.add_subcommand("vq", "Train the VQ tokenizer on shapes (64x64 -> 16x16 codes)");
  vq->add_option("--out", a->out, "Run folder (checkpoints, log.csv, final weights); resumes if it has a checkpoint")->required();
  vq->add_option("--steps", a->params.schedule.steps, "Optimisation steps")->capture_default_str();
  vq->add_option("--lr", a->params.schedule.peak_lr, "Peak learning rate (cosine schedule)")->capture_default_str();
  vq->add_option("--batch", a->batch, "Images per step")->capture_default_str();
  vq->add_option("--crop", a->crop, "Train on random crops of this side (multiple of 4, <= 64)")->check(CLI::Range(8, 64))->capture_default_str();
  vq->add_option("--codebook", a->config.codebook_size, "Codebook size")->capture_default_str();
  vq->add_option("--ch", a->config.ch, "Base channels")->capture_default_str();
  vq->add_option("--norm-groups", a->config.norm_groups, "GroupNorm groups (must divide every channel count)")->capture_default_str();
  vq->add_option("--held-out", a->held_out, "Held-out shapes images for PSNR")->capture_default_str();
  vq->add_option("--seed", a->params.seed, "Seed (weights and data)")->check(whole_number_check())->capture_default_str();
  vq->add_option("--threads", a->threads, "LibTorch threads")->capture_default_str();
  vq->add_option("--emoji", a->emoji, "Emoji folder (speculum-cli data emoji): half of each batch, and a held-out PSNR");
  vq->add_option("--checkpoint-every", a->params.checkpoint_every, "Steps between checkpoints")->capture_default_str();
  vq->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      validate_config(a->config);
      if (a->crop % a->config.downsample_factor() != 0) throw Error("--crop must be a multiple of the downsampling factor");
      at::set_num_threads(a->threads);
      stop_training_on_signals();
      std::filesystem::create_directories(a->out);
      std::cout << "VQ: " << parameter_count(vq_tensor_specs(a->config)) << " parameters, " << a->params.schedule.steps
                << " steps of " << a->batch << " crops of " << a->crop << " px\n";
      std::vector<HeldOutImages> held_out = {{"shapes", data::shapes_images(900000000, a->held_out)}};
      const int align = a->config.downsample_factor();
      ImageBatches batches = data::shapes_crop_batches(a->params.seed, a->batch, a->crop, align);
      if (!a->emoji.empty()) {
        // Every 16th emoji is held out for PSNR; the rest share each batch half and half with shapes.
        const at::Tensor all = data::load_folder_dataset(a->emoji).images;
        const at::Tensor held = at::arange(0, all.size(0), 16, at::kLong);
        const at::Tensor keep = at::arange(0, all.size(0), at::kLong).index_select(0, (at::arange(0, all.size(0), at::kLong) % 16 != 0).nonzero().reshape({-1}));
        held_out.push_back({"emoji", all.index_select(0, held)});
        batches = data::mixed_batches({data::shapes_crop_batches(a->params.seed, a->batch - a->batch / 2, a->crop, align),
                                       data::crop_batches(all.index_select(0, keep), a->params.seed + 1, a->batch / 2, a->crop, align)});
      }
      const TensorMap weights = train_vq(a->config, a->params, a->out, batches, held_out,
                                         [](const std::string& line) { std::cout << line << std::endl; }, &training_stop);
      save_tensors(a->out + "/vq.safetensors", weights);
      write_text_atomically(a->out + "/tokenizer.json", tokenizer_section(a->config, "vq.safetensors").dump(2) + "\n");
      std::cout << "wrote " << a->out << "/vq.safetensors\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  struct TokenizeArgs {
    std::string vq, out, emoji;
    int count = 20000;
    std::uint64_t seed = 0;
    int downscale = 1;
    bool emoji_held_out = false;
    std::vector<std::string> backgrounds;
  };
  auto t = std::make_shared<TokenizeArgs>();
  CLI::App* tok = train.add_subcommand("tokenize", "Render shapes scenes and encode them with a trained tokenizer");
  tok->add_option("--vq", t->vq, "VQ run folder (tokenizer.json, vq.safetensors)")->required();
  tok->add_option("--out", t->out, "Corpus file (.safetensors)")->required();
  tok->add_option("--count", t->count, "Scenes")->capture_default_str();
  tok->add_option("--seed", t->seed, "First scene seed")->check(whole_number_check())->capture_default_str();
  tok->add_option("--emoji", t->emoji, "Also the emoji folder (all but every 16th, which stays held out)");
  tok->add_flag("--emoji-held-out", t->emoji_held_out, "Take only the held-out emoji (every 16th) instead");
  tok->add_option("--backgrounds", t->backgrounds,
                  "Keep only scenes on these background modes (seeds from --seed on, skipping the others; default all)")
      ->check(CLI::IsMember({"flat", "gradient", "noisy", "striped"}))
      ->delimiter(',');
  // MuLo-SD's low-resolution drafter learns the same scenes at half the grid (docs/methods.md).
  tok->add_option("--downscale", t->downscale, "Average-pool every image by this factor before encoding (2: an 8x8 grid)")
      ->check(CLI::IsMember({1, 2, 4}))
      ->capture_default_str();
  tok->final_callback([t] {
    const int rc = run_reporting_errors([&] {
      const VqConfig config = read_vq_run(t->vq);
      const VqModel vq = VqModel::load(config, t->vq + "/vq.safetensors", at::kCPU);
      // Word ids: the shapes grammar first, then every new word of the emoji names, in order of appearance.
      std::vector<std::string> words = data::caption_vocabulary();
      data::FolderDataset emoji;
      if (!t->emoji.empty()) {
        emoji = data::load_folder_dataset(t->emoji);
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
        const at::Tensor scaled = t->downscale == 1 ? images : at::avg_pool2d(images, {t->downscale, t->downscale});
        return vq.encode(scaled).reshape({images.size(0), -1});
      };
      // The scenes' seeds: consecutive from --seed, less those on a background mode not asked for.
      std::vector<std::uint64_t> seeds;
      for (std::uint64_t seed = t->seed; static_cast<int>(seeds.size()) < t->count; ++seed) {
        const std::string mode = data::mode_name(data::sample_scene(seed).mode);
        if (t->backgrounds.empty() || std::find(t->backgrounds.begin(), t->backgrounds.end(), mode) != t->backgrounds.end())
          seeds.push_back(seed);
      }
      for (int i = 0; i < t->count; i += 64) {
        const std::vector<std::uint64_t> chunk(seeds.begin() + i, seeds.begin() + std::min(i + 64, t->count));
        codes.push_back(encode(data::shapes_images(chunk)));
        const int side = static_cast<int>(std::lround(std::sqrt(codes.back().size(1))));
        for (std::uint64_t seed : chunk) {
          const data::Scene scene = data::sample_scene(seed);
          corpus.words.push_back(vocabulary.encode(scene.caption()));
          const std::vector<float> share = data::object_share_per_cell(scene, side);
          shares.push_back(at::tensor(share, at::kFloat).unsqueeze(0));
        }
        if ((i / 64) % 20 == 0) std::cout << "tokenised " << i + static_cast<int>(chunk.size()) << " / " << t->count << std::endl;
      }
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(emoji.captions.size()); ++i) {
        if ((i % 16 == 0) != t->emoji_held_out) continue;
        codes.push_back(encode(emoji.images.narrow(0, i, 1)));
        shares.push_back(at::zeros({1, codes.back().size(1)}, at::kFloat));
        corpus.words.push_back(vocabulary.encode(emoji.captions[i]));
      }
      corpus.codes = at::cat(codes);
      corpus.object_share = at::cat(shares);
      corpus.save(t->out, 16);
      std::cout << "wrote " << t->out << " (" << corpus.size() << " images x " << corpus.codes.size(1) << " tokens)\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  struct FeatureArgs {
    std::string out;
    FeatureNetTrainParams params;
    int batch = 64;
    int held_out = 512;
    int threads = 2;
  };
  auto f = std::make_shared<FeatureArgs>();
  CLI::App* features = train.add_subcommand("features", "Train the shapes feature network behind bench's Fréchet distance");
  features->add_option("--out", f->out, "Run folder (checkpoints, log.csv, features.safetensors); resumes if it has a checkpoint")->required();
  features->add_option("--steps", f->params.schedule.steps, "Optimisation steps")->check(CLI::Range(1, 10000000))->capture_default_str();
  features->add_option("--lr", f->params.schedule.peak_lr, "Peak learning rate (cosine schedule)")->capture_default_str();
  features->add_option("--batch", f->batch, "Fresh scenes per step")->check(CLI::Range(2, 4096))->capture_default_str();
  features->add_option("--held-out", f->held_out, "Held-out scenes for accuracy")->check(CLI::Range(1, 100000))->capture_default_str();
  features->add_option("--seed", f->params.seed, "Seed (weights and data)")->capture_default_str();
  features->add_option("--threads", f->threads, "LibTorch threads")->check(CLI::Range(1, 1024))->capture_default_str();
  features->add_option("--checkpoint-every", f->params.checkpoint_every, "Steps between checkpoints")->check(CLI::Range(1, 10000000))->capture_default_str();
  features->final_callback([f] {
    const int rc = run_reporting_errors([&] {
      at::set_num_threads(f->threads);
      stop_training_on_signals();
      std::filesystem::create_directories(f->out);
      std::cout << "feature network: " << parameter_count(feature_net_tensor_specs()) << " parameters, " << f->params.schedule.steps
                << " steps of " << f->batch << " scenes\n";
      // Held out: the VQ's held-out seeds, disjoint from the random 64-bit training seeds and the eval prompts.
      const SceneBatch held_out = data::shapes_scene_batch(900000000, f->held_out);
      const TensorMap weights = train_feature_net(f->params, f->out, data::shapes_scene_batches(f->params.seed, f->batch), held_out,
                                                  [](const std::string& line) { std::cout << line << std::endl; }, &training_stop);
      save_tensors(f->out + "/features.safetensors", weights, DType::F32, {{"format", kFeatureNetFormat}});
      std::cout << "wrote " << f->out << "/features.safetensors\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
