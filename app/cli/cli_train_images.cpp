// speculum-cli train vq | tokenize | features: the project's own VQ tokenizer on the shapes data, the tokenised
// corpus the target trains on, and the feature network behind bench's Fréchet distance. They render scenes, so they
// need OpenCV (absent from SPECULUM_ENGINE_ONLY builds).
#include "cli/cli_options.h"
#include "cli/train_shared.h"

namespace speculum::cli {

void add_image_training_commands(CLI::App& train) {
  auto a = std::make_shared<VqTrainRequest>();
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
    const int rc = run_reporting_errors([&] { train_vq_run(*a, training_callbacks()); });
    if (rc) throw CLI::RuntimeError(rc);
  });

  auto t = std::make_shared<TokenizeRequest>();
  CLI::App* tok = train.add_subcommand("tokenize", "Render shapes scenes and encode them with a trained tokenizer");
  tok->add_option("--vq", t->vq_run, "VQ run folder (tokenizer.json, vq.safetensors)")->required();
  tok->add_option("--out", t->out, "Corpus file (.safetensors)")->required();
  tok->add_option("--count", t->count, "Scenes")->capture_default_str();
  tok->add_option("--seed", t->seed, "First scene seed")->check(whole_number_check())->capture_default_str();
  tok->add_option("--emoji", t->emoji, "Also the emoji folder (all but every 16th, which stays held out)");
  tok->add_flag("--emoji-held-out", t->emoji_held_out, "Take only the held-out emoji (every 16th) instead");
  tok->add_option("--backgrounds", t->backgrounds,
                  "Keep only scenes on these background modes (seeds from --seed on, skipping the others; default all)")
      ->check(CLI::IsMember({"flat", "gradient", "noisy", "striped"}))
      ->delimiter(',');
  tok->add_option("--families", t->families,
                  "Keep only scenes of these families (seeds from --seed on, skipping the others; default all): a corpus "
                  "that over-samples some, mixed with another")
      ->check(CLI::IsMember({"single", "count", "relation"}))
      ->delimiter(',');
  // MuLo-SD's low-resolution drafter learns the same scenes at half the grid (docs/methods.md).
  tok->add_option("--downscale", t->downscale, "Average-pool every image by this factor before encoding (2: an 8x8 grid)")
      ->check(CLI::IsMember({1, 2, 4}))
      ->capture_default_str();
  tok->final_callback([t] {
    const int rc = run_reporting_errors([&] { tokenize_scenes(*t, progress_callbacks()); });
    if (rc) throw CLI::RuntimeError(rc);
  });

  auto f = std::make_shared<FeatureNetTrainRequest>();
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
    const int rc = run_reporting_errors([&] { train_feature_net_run(*f, training_callbacks()); });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
