// speculum-cli train target | drafter | samples | fit | bundle: the parts that need only LibTorch (they run in
// SPECULUM_ENGINE_ONLY builds too, on CUDA with --device). Resumable; Ctrl-C stops after a checkpoint.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "cli/cli_options.h"
#include "cli/train_shared.h"
#include "data/shapes_scene.h"
#include "io/bundle.h"
#include "models/device.h"
#include "models/drafter.h"
#include "models/model_config.h"
#include "models/text_vocabulary.h"
#include "models/vq_model.h"
#include "train/drafter_trainer.h"
#include "train/spatial_heads_trainer.h"
#include "train/target_trainer.h"

namespace speculum::cli {
namespace {

struct TargetShape {
  int dim = 192;
  int layers = 6;
  int heads = 4;
  int text_encoder_layers = 2;
  bool image_positions = true;
};

// The default target: a small LlamaGen GPT (about 3.7M parameters at the default shape) reading captions through a
// two-block word-level encoder.
// The grid is the corpus's (16x16 for 64 px scenes; 8x8 for MuLo-SD's low-resolution drafter).
BundleManifest default_manifest(const VqConfig& tokenizer, const TokenizedCorpus& corpus, const TargetShape& shape) {
  const auto side = static_cast<int>(std::lround(std::sqrt(static_cast<double>(corpus.codes.size(1)))));
  if (side * side != corpus.codes.size(1))
    throw Error("corpus images have " + std::to_string(corpus.codes.size(1)) + " tokens, not a square grid");
  BundleManifest m;
  m.name = "speculum-shapes";
  m.tokenizer = tokenizer;
  GptConfig& g = m.target;
  g.dim = shape.dim;
  g.n_layer = shape.layers;
  g.n_head = shape.heads;
  g.vocab_size = tokenizer.codebook_size;
  g.grid_rows = g.grid_cols = side;
  g.condition = ConditionKind::Text;
  m.text_vocab = corpus.vocabulary;
  g.text_vocab_size = static_cast<int>(m.text_vocab.size());
  g.cls_token_num = 16;
  g.caption_dim = 128;
  g.text_encoder_layers = shape.text_encoder_layers;
  g.image_positions = shape.image_positions;
  m.image_size = side * tokenizer.downsample_factor();
  return m;
}

// Stores the target run `run_dir` (trained at a smaller grid) as bundle `bundle_dir`'s MuLo-SD low-resolution drafter.
void install_low_res_drafter(const std::string& run_dir, const std::string& bundle_dir) {
  BundleManifest m = read_manifest(bundle_dir);
  const BundleManifest run = read_manifest(run_dir);
  GptConfig same_grid = run.target;
  same_grid.grid_rows = m.target.grid_rows;
  same_grid.grid_cols = m.target.grid_cols;
  if (!(same_grid == m.target) || run.text_vocab != m.text_vocab || run.classes != m.classes)
    throw Error("run '" + run_dir + "' is not bundle '" + m.dir + "''s target architecture and conditioning at another grid");
  const int factor = m.target.grid_rows / run.target.grid_rows;
  if (factor * run.target.grid_rows != m.target.grid_rows || factor * run.target.grid_cols != m.target.grid_cols ||
      std::find(kLowResFactors.begin(), kLowResFactors.end(), factor) == kLowResFactors.end())
    throw Error("run '" + run_dir + "' has a " + std::to_string(run.target.grid_rows) + "x" + std::to_string(run.target.grid_cols) +
                " grid; a low-resolution drafter's must be the bundle's " + std::to_string(m.target.grid_rows) + "x" +
                std::to_string(m.target.grid_cols) + " divided by 2 or 4");
  m.low_res_drafter = LowResDrafterEntry{"low-res-drafter.safetensors", run.target.grid_rows, run.target.grid_cols};
  std::string weights = checkpoint_dir(run_dir) + "/ema.safetensors";
  if (!std::filesystem::exists(weights)) weights = checkpoint_dir(run_dir) + "/weights.safetensors";
  save_tensors(m.low_res_drafter_path(), load_tensors(SafetensorsFile::open(weights), gpt_tensor_specs(run.target), at::kCPU),
               DType::F16);
  write_manifest(m, bundle_dir);
  std::cout << "installed " << run.target.grid_rows << "x" << run.target.grid_cols << " low-resolution drafter in " << m.dir << "\n";
}

// `corpus` at a grid `factor` times smaller: each image decoded with the bundle's tokenizer, average-pooled by
// `factor` and encoded again (as train tokenize --downscale encodes rendered scenes); words and classes kept.
TokenizedCorpus downscaled_corpus(const TokenizedCorpus& corpus, const VqModel& vq, int rows, int cols, int factor) {
  c10::InferenceMode inference;
  TokenizedCorpus low = corpus;
  std::vector<at::Tensor> codes;
  for (std::int64_t i = 0; i < corpus.size(); i += 32) {
    const at::Tensor chunk = corpus.codes.narrow(0, i, std::min<std::int64_t>(32, corpus.size() - i)).reshape({-1, rows, cols});
    codes.push_back(vq.encode(at::avg_pool2d(vq.decode(chunk), {factor, factor})).reshape({chunk.size(0), -1}));
  }
  low.codes = at::cat(codes).to(at::kLong);
  low.object_share = at::Tensor();
  return low;
}

}  // namespace

CLI::App* add_train_commands(CLI::App& app) {
  CLI::App* train = app.add_subcommand("train", "Train the default model's parts");
  train->require_subcommand(1);
  struct TargetArgs {
    std::string vq, held_out, out, device = "cpu";
    std::vector<std::string> corpora;
    TargetTrainParams params;
    TargetShape shape;
    int threads = 2;
  };
  auto g = std::make_shared<TargetArgs>();
  CLI::App* target = train->add_subcommand("target", "Train the text-conditioned target on a tokenised corpus");
  target->add_option("--vq", g->vq, "VQ run folder")->required();
  target->add_option("--corpus", g->corpora, "Training corpora (from train tokenize), used as one")->required();
  target->add_option("--held-out", g->held_out, "Held-out corpus for validation loss");
  target->add_option("--out", g->out, "Run folder; resumes if it has a checkpoint")->required();
  target->add_option("--steps", g->params.schedule.steps, "Optimisation steps")->capture_default_str();
  target->add_option("--stop-at", g->params.stop_at,
                     "Stop with a checkpoint at this step without moving the schedule's horizon (0 = run to --steps)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  target->add_option("--lr", g->params.schedule.peak_lr, "Peak learning rate")->capture_default_str();
  target->add_option("--warmup", g->params.schedule.warmup, "Linear warm-up steps")->capture_default_str();
  target->add_option("--batch", g->params.batch, "Sequences per step")->capture_default_str();
  target->add_option("--seed", g->params.seed, "Seed")->check(whole_number_check())->capture_default_str();
  target->add_option("--threads", g->threads, "LibTorch threads")->capture_default_str();
  add_training_device_option(*target, g->device);
  target->add_option("--checkpoint-every", g->params.checkpoint_every, "Steps between checkpoints")->capture_default_str();
  target->add_option("--dim", g->shape.dim, "Model width (a new run only; a resumed run keeps its manifest)")->capture_default_str();
  target->add_option("--layers", g->shape.layers, "Transformer blocks")->capture_default_str();
  target->add_option("--heads", g->shape.heads, "Attention heads (head size divisible by 4 for 2D RoPE)")->capture_default_str();
  target->add_option("--text-encoder-layers", g->shape.text_encoder_layers,
                     "Contextual blocks over the caption's words (0: bare word embeddings)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  target->add_flag("--image-positions,!--no-image-positions", g->shape.image_positions,
                   "Learned position embedding per grid cell on top of 2D RoPE")
      ->capture_default_str();
  target->add_option("--object-weight", g->params.object_weight,
                     "Weigh each token's loss by 1 + this x the share of its cell objects cover (a corpus tokenised with "
                     "object shares; 0: the plain mean)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  target->add_option("--caption-reading", g->params.caption_reading,
                     "Weight of the caption-reading loss: a reader on each image's first object row predicts its caption's "
                     "words, so the positions that decide the first shape must carry them (0: off)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  target->add_option("--init-from", g->params.init_from,
                     "A new run starts from this target run's checkpoint; tensors it lacks start as the identity");
  target->final_callback([g] {
    const int rc = run_reporting_errors([&] {
      at::set_num_threads(g->threads);
      stop_training_on_signals();
      g->params.device = resolve_device(g->device);
      const TokenizedCorpus corpus = load_corpora(g->corpora);
      if (corpus.vocabulary.empty()) throw Error("'" + g->corpora.front() + "' carries no vocabulary (re-run train tokenize)");
      // A resumed run keeps the architecture it was started with; a new one records it for `train bundle`.
      const bool resuming = std::filesystem::exists(checkpoint_dir(g->out)) && std::filesystem::exists(g->out + "/speculum.json");
      const BundleManifest m = resuming ? read_manifest(g->out) : default_manifest(read_vq_run(g->vq), corpus, g->shape);
      if (!resuming && !g->params.init_from.empty() && read_manifest(g->params.init_from).text_vocab != corpus.vocabulary)
        throw Error("--init-from '" + g->params.init_from + "' was trained on another vocabulary than the corpus");
      if (!resuming) {
        std::filesystem::create_directories(g->out);
        write_manifest(m, g->out);
      }
      const TokenizedCorpus held_out = g->held_out.empty() ? TokenizedCorpus{} : TokenizedCorpus::load(g->held_out);
      std::cout << "target: " << parameter_count(gpt_tensor_specs(m.target)) << " parameters, " << corpus.size()
                << " training images, " << g->params.schedule.steps << " steps of " << g->params.batch << "\n";
      train_target(m.target, g->params, g->out, corpus, held_out, [](const std::string& line) { std::cout << line << std::endl; }, &training_stop);
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  struct DrafterArgs {
    TrainerFlags flags;
    std::string objective = "eagle";
    DrafterTrainParams params;
    bool install = false;
  };
  auto d = std::make_shared<DrafterArgs>();
  CLI::App* drafter = train->add_subcommand("drafter", "Train an EAGLE-style drafter on a bundle's frozen target");
  d->flags.add_to(*drafter, d->params.schedule, d->params.stop_at, d->params.batch, d->params.seed, d->params.checkpoint_every);
  drafter->add_option("--objective", d->objective, "eagle: Smooth-L1 + 0.1 soft CE; lisa: Locality-Informed Distillation")
      ->check(CLI::IsMember({"eagle", "lisa"}))
      ->capture_default_str();
  drafter->add_flag("--lisa-weights,!--no-lisa-weights", d->params.lisa_weights,
                    "lisa: weight positions by structured uncertainty")->capture_default_str();
  drafter->add_flag("--lisa-smoothing,!--no-lisa-smoothing", d->params.lisa_smoothing,
                    "lisa: smooth the soft target over the codebook")->capture_default_str();
  drafter->add_flag("--install", d->install, "At the end, store the drafter in the bundle (F16) under the objective's name");
  drafter->final_callback([d] {
    const int rc = run_reporting_errors([&] {
      d->params.objective = parse_drafter_objective(d->objective);
      FrozenTargetRun run = start_frozen_target_run(d->flags, "drafter");
      BundleManifest& m = run.manifest;
      const VqModel vq = VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU);
      std::cout << "drafter (" << d->objective << "): " << parameter_count(drafter_tensor_specs(m.target)) << " parameters for "
                << m.name << "'s target, " << run.corpus.size() << " training images, " << d->params.schedule.steps << " steps of "
                << d->params.batch << "\n";
      const TensorMap weights = train_drafter(*run.target, vq.normalized_codebook(), d->params, d->flags.out, run.corpus, run.held_out,
                                              [](const std::string& line) { std::cout << line << std::endl; }, &training_stop);
      save_tensors(d->flags.out + "/drafter.safetensors", weights);
      std::cout << "wrote " << d->flags.out << "/drafter.safetensors\n";
      if (d->install && !training_stop) {
        const std::string file = "drafter-" + d->objective + ".safetensors";
        save_tensors(m.dir + "/" + file, weights, DType::F16);
        m.drafters[d->objective] = {file, d->objective};
        write_manifest(m, m.dir);
        std::cout << "installed as drafter '" << d->objective << "' in " << m.dir << "\n";
      }
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  struct SpatialHeadsArgs {
    TrainerFlags flags;
    SpatialHeadsTrainParams params;
    bool install = false;
  };
  auto h = std::make_shared<SpatialHeadsArgs>();
  CLI::App* ssd = train->add_subcommand("ssd-heads", "Train SSD's horizontal and vertical heads on a bundle's frozen target");
  h->flags.add_to(*ssd, h->params.schedule, h->params.stop_at, h->params.batch, h->params.seed, h->params.checkpoint_every);
  ssd->add_option("--horizontal", h->params.horizontal, "Horizontal heads (offsets 1..k_h along a row)")
      ->check(CLI::Range(1, kMaxHorizontalHeads))->capture_default_str();
  ssd->add_option("--vertical", h->params.vertical, "Vertical heads (offsets 1..k_v rows down)")
      ->check(CLI::Range(1, kMaxVerticalHeads))->capture_default_str();
  ssd->add_flag("--install", h->install, "At the end, store the heads in the bundle (F16, ssd-heads.safetensors)");
  ssd->final_callback([h] {
    const int rc = run_reporting_errors([&] {
      FrozenTargetRun run = start_frozen_target_run(h->flags, "ssd-heads");
      BundleManifest& m = run.manifest;
      std::cout << "SSD heads (" << h->params.horizontal << " horizontal, " << h->params.vertical << " vertical): "
                << parameter_count(spatial_heads_tensor_specs(m.target, h->params.horizontal, h->params.vertical))
                << " parameters for " << m.name << "'s target, " << run.corpus.size() << " training images, "
                << h->params.schedule.steps << " steps of " << h->params.batch << "\n";
      const TensorMap weights = train_spatial_heads(*run.target, h->params, h->flags.out, run.corpus, run.held_out,
                                                    [](const std::string& line) { std::cout << line << std::endl; }, &training_stop);
      save_tensors(h->flags.out + "/ssd-heads.safetensors", weights);
      std::cout << "wrote " << h->flags.out << "/ssd-heads.safetensors\n";
      if (h->install && !training_stop) {
        m.ssd_heads = SpatialHeadsEntry{"ssd-heads.safetensors", h->params.horizontal, h->params.vertical};
        save_tensors(m.ssd_heads_path(), weights, DType::F16);
        write_manifest(m, m.dir);
        std::cout << "installed as the SSD heads of " << m.dir << "\n";
      }
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  // The target's own images at the bundle's sampling, as a corpus: self-distillation data for drafters.
  struct SamplesArgs {
    std::string bundle, out;
    std::vector<int> classes;  // class bundles: drawn uniformly from these (default: every class)
    int count = 256;
    std::uint64_t scene_seed = 960000000;
    int threads = 2;
    std::string device = "cpu";
  };
  auto sa = std::make_shared<SamplesArgs>();
  CLI::App* samples = train->add_subcommand("samples", "Generate the target's own images (ar, the bundle's sampling) as a corpus");
  samples->add_option("--bundle", sa->bundle, "Bundle")->required();
  samples->add_option("--out", sa->out, "Corpus file (.safetensors)")->required();
  samples->add_option("--count", sa->count, "Images")->check(CLI::Range(1, 1000000))->capture_default_str();
  samples->add_option("--scene-seed", sa->scene_seed, "Captions of shapes scenes (class bundles: the classes drawn) from this seed on")
      ->check(whole_number_check())->capture_default_str();
  samples->add_option("--classes", sa->classes, "Class bundles: draw the classes uniformly from these ids (default: all)")
      ->delimiter(',')->check(CLI::NonNegativeNumber);
  samples->add_option("--threads", sa->threads, "LibTorch threads")->capture_default_str();
  add_training_device_option(*samples, sa->device);
  samples->final_callback([sa] {
    const int rc = run_reporting_errors([&] {
      EngineParams ep;
      ep.bundle_dir = sa->bundle;
      stop_training_on_signals();  // Ctrl-C / SIGTERM: keep the images generated so far
      ep.device = sa->device;
      ep.threads = sa->threads;
      const auto engine = Engine::load(ep);
      const BundleManifest m = read_manifest(sa->bundle);
      const bool class_bundle = m.target.condition == ConditionKind::Class;
      if (!class_bundle && m.target.caption_source != CaptionSource::Words)
        throw Error("train samples: T5-conditioned bundles are not supported yet; '" + m.dir + "' reads T5 features");
      std::vector<int> classes = sa->classes;
      if (!class_bundle && !classes.empty()) throw Error("--classes: '" + m.dir + "' is text-conditioned, not class-conditioned");
      for (const int c : classes)
        if (c >= m.target.num_classes)
          throw Error("--classes: class " + std::to_string(c) + " is outside [0, " + std::to_string(m.target.num_classes) + ")");
      if (classes.empty())
        for (int c = 0; c < (class_bundle ? m.target.num_classes : 0); ++c) classes.push_back(c);
      const TextVocabulary vocabulary(m.text_vocab);
      TokenizedCorpus corpus;
      corpus.vocabulary = m.text_vocab;
      std::vector<at::Tensor> codes;
      for (int i = 0; i < sa->count && !training_stop; ++i) {
        GenerateParams p;
        p.seed = sa->scene_seed + i;
        if (class_bundle) {
          p.class_id = class_of_sample(p.seed, classes);
        } else {
          p.prompt = data::sample_scene(p.seed).caption();
        }
        p.sampling = engine->info().sampling;
        const auto tokens = engine->generate(p).tokens;
        codes.push_back(at::tensor(std::vector<std::int64_t>(tokens.begin(), tokens.end()), at::kLong));
        if (class_bundle) {
          corpus.words.emplace_back();
          corpus.classes.push_back(p.class_id);
        } else {
          corpus.words.push_back(vocabulary.encode(p.prompt));
        }
        if ((i + 1) % 50 == 0) std::cout << "generated " << i + 1 << " / " << sa->count << std::endl;
      }
      corpus.codes = at::stack(codes);
      corpus.save(sa->out, m.target.cls_token_num);
      std::cout << "wrote " << sa->out << " (" << corpus.size() << " images)\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  // How well a bundle's drafter fits its target on a corpus (teacher-forced): acceptance Σ min(p, q), top-1.
  struct FitArgs {
    std::string bundle, drafter = "eagle", corpus;
    int images = 256;
  };
  auto fa = std::make_shared<FitArgs>();
  CLI::App* fit = train->add_subcommand("fit", "Measure a bundle drafter's fit to its target on a corpus");
  fit->add_option("--bundle", fa->bundle, "Bundle")->required();
  fit->add_option("--drafter", fa->drafter, "Drafter name")->check(CLI::IsMember({"eagle", "lisa"}))->capture_default_str();
  fit->add_option("--corpus", fa->corpus, "Tokenised corpus")->required();
  fit->add_option("--images", fa->images, "Images (the corpus's first rows)")->capture_default_str();
  fit->final_callback([fa] {
    const int rc = run_reporting_errors([&] {
      const BundleManifest m = read_manifest(fa->bundle);
      if (!m.drafters.count(fa->drafter)) throw Error("bundle '" + m.dir + "' has no '" + fa->drafter + "' drafter");
      const Transformer target(m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), at::kCPU), at::kCPU);
      const Drafter d(target, load_tensors(SafetensorsFile::open(m.drafter_path(fa->drafter)), drafter_tensor_specs(m.target), at::kCPU));
      const DrafterFit f = drafter_fit(d, TokenizedCorpus::load(fa->corpus), fa->images);
      std::cout << "drafter '" << fa->drafter << "' on " << fa->corpus << ": acceptance " << f.acceptance << ", top-1 agreement " << f.top1 << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  // MuLo-SD's low-resolution drafter for any bundle, from its own samples: the samples downscaled through the bundle's
  // tokenizer, a target at the smaller grid initialised from the bundle's (cell positions resampled), trained on them.
  struct LowResTrainArgs {
    TrainerFlags flags;  // --corpus: the target's samples at its own grid (train samples); --held-out likewise
    int factor = 2;
    TargetTrainParams params;
    bool install = false;
  };
  auto lo = std::make_shared<LowResTrainArgs>();
  lo->params.schedule = {2000, 50, 3e-4, 0.1};
  CLI::App* low = train->add_subcommand("low-res", "Train a bundle's MuLo-SD low-resolution drafter on its own samples (train samples)");
  lo->flags.add_to(*low, lo->params.schedule, lo->params.stop_at, lo->params.batch, lo->params.seed, lo->params.checkpoint_every);
  low->add_option("--factor", lo->factor, "Grid factor: 2 (a 16x16 target drafts at 8x8) or 4")->check(CLI::IsMember({2, 4}))->capture_default_str();
  low->add_flag("--install", lo->install, "At the end, store it in the bundle as its low-resolution drafter (F16)");
  low->final_callback([lo] {
    const int rc = run_reporting_errors([&] {
      const TrainerFlags& f = lo->flags;
      at::set_num_threads(f.threads);
      stop_training_on_signals();
      lo->params.device = resolve_device(f.device);
      const BundleManifest m = read_manifest(f.bundle);
      BundleManifest run = m;  // the target's architecture and conditioning at the smaller grid, without the trained parts
      run.drafters.clear();
      run.ssd_heads.reset();
      run.low_res_drafter.reset();
      run.target.grid_rows = m.target.grid_rows / lo->factor;
      run.target.grid_cols = m.target.grid_cols / lo->factor;
      run.image_size = m.image_size / lo->factor;
      if (run.target.grid_rows * lo->factor != m.target.grid_rows || run.target.grid_cols * lo->factor != m.target.grid_cols)
        throw Error("--factor " + std::to_string(lo->factor) + " does not divide bundle '" + m.dir + "''s " +
                    std::to_string(m.target.grid_rows) + "x" + std::to_string(m.target.grid_cols) + " grid");
      // Samples at the bundle's grid, checked against it, then through its tokenizer at the smaller grid.
      const auto downscaled = [&](const TokenizedCorpus& samples) {
        check_corpus(samples, m.target);
        return downscaled_corpus(samples, VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU), m.target.grid_rows,
                                 m.target.grid_cols, lo->factor);
      };
      const std::string low_corpus = f.out + "/low-res-corpus.safetensors";
      if (!std::filesystem::exists(low_corpus)) {  // made once; a resumed run trains on the same tokens
        const TokenizedCorpus corpus = downscaled(load_corpora(f.corpora));
        std::filesystem::create_directories(f.out);
        corpus.save(low_corpus, m.target.cls_token_num);
        write_manifest(run, f.out);
      }
      lo->params.init_from = f.bundle;
      if (m.target.condition == ConditionKind::Class && !m.target.class_null_row) lo->params.caption_dropout = 0;  // no null class
      const TokenizedCorpus corpus = TokenizedCorpus::load(low_corpus);
      const TokenizedCorpus held_out = f.held_out.empty() ? TokenizedCorpus{} : downscaled(TokenizedCorpus::load(f.held_out));
      std::cout << "low-resolution drafter: " << run.target.grid_rows << "x" << run.target.grid_cols << " grid, "
                << corpus.size() << " images, " << lo->params.schedule.steps << " steps of " << lo->params.batch << "\n";
      train_target(read_manifest(f.out).target, lo->params, f.out, corpus, held_out,
                   [](const std::string& line) { std::cout << line << std::endl; }, &training_stop);
      if (lo->install && !training_stop) install_low_res_drafter(f.out, f.bundle);
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  // MuLo-SD's low-resolution drafter: a target run on a downscaled corpus, stored in a bundle it fits.
  struct LowResArgs {
    std::string run, bundle;
  };
  auto lr = std::make_shared<LowResArgs>();
  CLI::App* low_res = train->add_subcommand(
      "install-low-res", "Store a target run trained at a smaller grid (train tokenize --downscale) as a bundle's low-resolution drafter");
  low_res->add_option("--run", lr->run, "Target run folder (its latest checkpoint, EMA weights when present)")->required();
  low_res->add_option("--bundle", lr->bundle, "Bundle")->required();
  low_res->final_callback([lr] {
    const int rc = run_reporting_errors([&] { install_low_res_drafter(lr->run, lr->bundle); });
    if (rc) throw CLI::RuntimeError(rc);
  });

  struct BundleArgs {
    std::string vq, target, out;
    bool fp16 = true;
    SamplingParams sampling;
  };
  auto b = std::make_shared<BundleArgs>();
  CLI::App* bundle = train->add_subcommand("bundle", "Assemble a bundle from a VQ run and a target run's latest checkpoint");
  bundle->add_option("--vq", b->vq, "VQ run folder")->required();
  bundle->add_option("--target", b->target, "Target run folder")->required();
  bundle->add_option("--out", b->out, "Bundle folder")->required();
  bundle->add_flag("--fp16,!--fp32", b->fp16, "Store weights as F16 (default) or F32");
  // What the model is best sampled with (measured with `speculum-cli eval --cfg ...`); the CLI and the studio start there.
  add_sampling_options(*bundle, b->sampling, "the bundle's recommendation; default: the engine's");
  bundle->final_callback([b] {
    const int rc = run_reporting_errors([&] {
      b->sampling.validate();
      BundleManifest m = read_manifest(b->target);
      m.sampling = b->sampling;
      // The matrices run in the format they are stored in: f16 storage loses nothing more by running in f16, at half
      // the bytes per decode step (docs/benchmarks/studies.md, "Weight formats").
      m.weight_format = b->fp16 ? WeightFormat::F16 : WeightFormat::F32;
      // The EMA weights when the run has them (they sample better than the raw ones).
      std::string weights = checkpoint_dir(b->target) + "/ema.safetensors";
      if (!std::filesystem::exists(weights)) weights = checkpoint_dir(b->target) + "/weights.safetensors";
      const DType storage = b->fp16 ? DType::F16 : DType::F32;
      std::filesystem::create_directories(b->out);
      save_tensors(b->out + "/" + m.target_weights, load_tensors(SafetensorsFile::open(weights), gpt_tensor_specs(m.target), at::kCPU), storage);
      save_tensors(b->out + "/" + m.tokenizer_weights,
                   load_tensors(SafetensorsFile::open(b->vq + "/vq.safetensors"), vq_tensor_specs(m.tokenizer), at::kCPU), storage);
      write_manifest(m, b->out);
      std::cout << "wrote bundle " << b->out << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
  return train;
}

}  // namespace speculum::cli
