// speculum-cli train vq: the project's own VQ tokenizer on the shapes data (resumable; Ctrl-C stops
// after a checkpoint). Output: <out>/vq.safetensors and <out>/tokenizer.json.
#include <ATen/Parallel.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <c10/core/InferenceMode.h>

#include "cli/cli_options.h"
#include "io/atomic_file.h"
#include "data/image_batches.h"
#include <algorithm>
#include "models/model_config.h"
#include "data/shapes_scene.h"
#include "io/bundle.h"
#include "io/json_fields.h"
#include "models/text_vocabulary.h"
#include "models/vq_model.h"
#include "models/drafter.h"
#include "train/drafter_trainer.h"
#include "train/target_trainer.h"
#include "train/vq_trainer.h"

namespace speculum::cli {
namespace {

std::atomic<bool> g_stop{false};
void request_stop(int) { g_stop = true; }

VqConfig read_vq_run(const std::string& vq_dir) {
  const std::string path = vq_dir + "/tokenizer.json";
  std::ifstream in(path);
  if (!in) throw Error("cannot open '" + path + "' (train the tokenizer first: speculum-cli train vq --out " + vq_dir + ")");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json doc = parse_untrusted_json(text.str(), path, 4);
  return read_tokenizer_section(JsonFields(doc, path));
}

struct TargetShape {
  int dim = 192;
  int layers = 6;
  int heads = 4;
  int text_encoder_layers = 2;
  bool image_positions = true;
};

// The default target: a small LlamaGen GPT (about 3.7M parameters at the default shape) reading captions through a
// two-block word-level encoder.
BundleManifest default_manifest(const VqConfig& tokenizer, const std::vector<std::string>& vocabulary, const TargetShape& shape) {
  BundleManifest m;
  m.name = "speculum-shapes";
  m.tokenizer = tokenizer;
  GptConfig& g = m.target;
  g.dim = shape.dim;
  g.n_layer = shape.layers;
  g.n_head = shape.heads;
  g.vocab_size = tokenizer.codebook_size;
  g.grid_rows = g.grid_cols = data::kShapesImageSize / tokenizer.downsample_factor();
  g.condition = ConditionKind::Text;
  m.text_vocab = vocabulary;
  g.text_vocab_size = static_cast<int>(m.text_vocab.size());
  g.cls_token_num = 16;
  g.caption_dim = 128;
  g.text_encoder_layers = shape.text_encoder_layers;
  g.image_positions = shape.image_positions;
  m.image_size = data::kShapesImageSize;
  return m;
}

}  // namespace

void add_train_commands(CLI::App& app) {
  CLI::App* train = app.add_subcommand("train", "Train the default model's parts");
  train->require_subcommand(1);

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
  CLI::App* vq = train->add_subcommand("vq", "Train the VQ tokenizer on shapes (64x64 -> 16x16 codes)");
  vq->add_option("--out", a->out, "Run folder (checkpoints, log.csv, final weights); resumes if it has a checkpoint")->required();
  vq->add_option("--steps", a->params.schedule.steps, "Optimisation steps")->capture_default_str();
  vq->add_option("--lr", a->params.schedule.peak_lr, "Peak learning rate (cosine schedule)")->capture_default_str();
  vq->add_option("--batch", a->batch, "Images per step")->capture_default_str();
  vq->add_option("--crop", a->crop, "Train on random crops of this side (multiple of 4, <= 64)")->check(CLI::Range(8, 64))->capture_default_str();
  vq->add_option("--codebook", a->config.codebook_size, "Codebook size")->capture_default_str();
  vq->add_option("--ch", a->config.ch, "Base channels")->capture_default_str();
  vq->add_option("--norm-groups", a->config.norm_groups, "GroupNorm groups (must divide every channel count)")->capture_default_str();
  vq->add_option("--held-out", a->held_out, "Held-out shapes images for PSNR")->capture_default_str();
  vq->add_option("--seed", a->params.seed, "Seed (weights and data)")->capture_default_str();
  vq->add_option("--threads", a->threads, "LibTorch threads")->capture_default_str();
  vq->add_option("--emoji", a->emoji, "Emoji folder (speculum-cli data emoji): half of each batch, and a held-out PSNR");
  vq->add_option("--checkpoint-every", a->params.checkpoint_every, "Steps between checkpoints")->capture_default_str();
  vq->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      validate_config(a->config);
      if (a->crop % a->config.downsample_factor() != 0) throw Error("--crop must be a multiple of the downsampling factor");
      at::set_num_threads(a->threads);
      std::signal(SIGINT, request_stop);
      std::signal(SIGTERM, request_stop);
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
                                         [](const std::string& line) { std::cout << line << std::endl; }, &g_stop);
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
    bool emoji_held_out = false;
  };
  auto t = std::make_shared<TokenizeArgs>();
  CLI::App* tok = train->add_subcommand("tokenize", "Render shapes scenes and encode them with a trained tokenizer");
  tok->add_option("--vq", t->vq, "VQ run folder (tokenizer.json, vq.safetensors)")->required();
  tok->add_option("--out", t->out, "Corpus file (.safetensors)")->required();
  tok->add_option("--count", t->count, "Scenes")->capture_default_str();
  tok->add_option("--seed", t->seed, "First scene seed")->capture_default_str();
  tok->add_option("--emoji", t->emoji, "Also the emoji folder (all but every 16th, which stays held out)");
  tok->add_flag("--emoji-held-out", t->emoji_held_out, "Take only the held-out emoji (every 16th) instead");
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
      std::vector<at::Tensor> codes;
      for (int i = 0; i < t->count; i += 64) {
        const int n = std::min(64, t->count - i);
        codes.push_back(vq.encode(data::shapes_images(t->seed + i, n)).reshape({n, -1}));
        for (int j = 0; j < n; ++j) corpus.words.push_back(vocabulary.encode(data::sample_scene(t->seed + i + j).caption()));
        if ((i / 64) % 20 == 0) std::cout << "tokenised " << i + n << " / " << t->count << std::endl;
      }
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(emoji.captions.size()); ++i) {
        if ((i % 16 == 0) != t->emoji_held_out) continue;
        codes.push_back(vq.encode(emoji.images.narrow(0, i, 1)).reshape({1, -1}));
        corpus.words.push_back(vocabulary.encode(emoji.captions[i]));
      }
      corpus.codes = at::cat(codes);
      corpus.save(t->out, 16);
      std::cout << "wrote " << t->out << " (" << corpus.size() << " images x " << corpus.codes.size(1) << " tokens)\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  struct TargetArgs {
    std::string vq, corpus, held_out, out;
    TargetTrainParams params;
    TargetShape shape;
    int threads = 2;
  };
  auto g = std::make_shared<TargetArgs>();
  CLI::App* target = train->add_subcommand("target", "Train the text-conditioned target on a tokenised corpus");
  target->add_option("--vq", g->vq, "VQ run folder")->required();
  target->add_option("--corpus", g->corpus, "Training corpus (from train tokenize)")->required();
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
  target->add_option("--seed", g->params.seed, "Seed")->capture_default_str();
  target->add_option("--threads", g->threads, "LibTorch threads")->capture_default_str();
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
  target->add_option("--init-from", g->params.init_from,
                     "A new run starts from this target run's checkpoint; tensors it lacks start as the identity");
  target->final_callback([g] {
    const int rc = run_reporting_errors([&] {
      at::set_num_threads(g->threads);
      std::signal(SIGINT, request_stop);
      std::signal(SIGTERM, request_stop);
      const TokenizedCorpus corpus = TokenizedCorpus::load(g->corpus);
      if (corpus.vocabulary.empty()) throw Error("'" + g->corpus + "' carries no vocabulary (re-run train tokenize)");
      // A resumed run keeps the architecture it was started with; a new one records it for `train bundle`.
      const bool resuming = std::filesystem::exists(checkpoint_dir(g->out)) && std::filesystem::exists(g->out + "/speculum.json");
      const BundleManifest m = resuming ? read_manifest(g->out) : default_manifest(read_vq_run(g->vq), corpus.vocabulary, g->shape);
      if (!resuming && !g->params.init_from.empty() && read_manifest(g->params.init_from).text_vocab != corpus.vocabulary)
        throw Error("--init-from '" + g->params.init_from + "' was trained on another vocabulary than '" + g->corpus + "'");
      if (!resuming) {
        std::filesystem::create_directories(g->out);
        write_manifest(m, g->out);
      }
      const TokenizedCorpus held_out = g->held_out.empty() ? TokenizedCorpus{} : TokenizedCorpus::load(g->held_out);
      std::cout << "target: " << parameter_count(gpt_tensor_specs(m.target)) << " parameters, " << corpus.size()
                << " training images, " << g->params.schedule.steps << " steps of " << g->params.batch << "\n";
      train_target(m.target, g->params, g->out, corpus, held_out, [](const std::string& line) { std::cout << line << std::endl; }, &g_stop);
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  struct DrafterArgs {
    std::string bundle, corpus, held_out, out, objective = "eagle";
    DrafterTrainParams params;
    bool install = false;
    int threads = 2;
  };
  auto d = std::make_shared<DrafterArgs>();
  CLI::App* drafter = train->add_subcommand("drafter", "Train an EAGLE-style drafter on a bundle's frozen target");
  drafter->add_option("--bundle", d->bundle, "Bundle whose target the drafter serves")->required();
  drafter->add_option("--corpus", d->corpus, "Tokenised corpus (train tokenize) the target is teacher-forced on")->required();
  drafter->add_option("--held-out", d->held_out, "Held-out corpus: acceptance and top-1 agreement at checkpoints");
  drafter->add_option("--out", d->out, "Run folder; resumes if it has a checkpoint")->required();
  drafter->add_option("--objective", d->objective, "eagle: Smooth-L1 + 0.1 soft CE; lisa: Locality-Informed Distillation")
      ->check(CLI::IsMember({"eagle", "lisa"}))
      ->capture_default_str();
  drafter->add_flag("--lisa-weights,!--no-lisa-weights", d->params.lisa_weights,
                    "lisa: weight positions by structured uncertainty")->capture_default_str();
  drafter->add_flag("--lisa-smoothing,!--no-lisa-smoothing", d->params.lisa_smoothing,
                    "lisa: smooth the soft target over the codebook")->capture_default_str();
  drafter->add_option("--steps", d->params.schedule.steps, "Optimisation steps")->capture_default_str();
  drafter->add_option("--stop-at", d->params.stop_at, "Stop with a checkpoint at this step (0 = run to --steps)")->capture_default_str();
  drafter->add_option("--lr", d->params.schedule.peak_lr, "Peak learning rate")->capture_default_str();
  drafter->add_option("--warmup", d->params.schedule.warmup, "Linear warm-up steps")->capture_default_str();
  drafter->add_option("--batch", d->params.batch, "Sequences per step")->capture_default_str();
  drafter->add_option("--seed", d->params.seed, "Seed")->capture_default_str();
  drafter->add_option("--threads", d->threads, "LibTorch threads")->capture_default_str();
  drafter->add_option("--checkpoint-every", d->params.checkpoint_every, "Steps between checkpoints")->capture_default_str();
  drafter->add_flag("--install", d->install, "At the end, store the drafter in the bundle (F16) under the objective's name");
  drafter->final_callback([d] {
    const int rc = run_reporting_errors([&] {
      at::set_num_threads(d->threads);
      std::signal(SIGINT, request_stop);
      std::signal(SIGTERM, request_stop);
      d->params.objective = parse_drafter_objective(d->objective);
      BundleManifest m = read_manifest(d->bundle);
      const TokenizedCorpus corpus = TokenizedCorpus::load(d->corpus);
      if (m.target.condition != ConditionKind::Text) throw Error("train drafter: only text-conditioned bundles so far");
      for (std::size_t i = 0; i < std::min(corpus.vocabulary.size(), m.text_vocab.size()); ++i)
        if (corpus.vocabulary[i] != m.text_vocab[i])
          throw Error("'" + d->corpus + "' numbers its words differently from the bundle (word " + std::to_string(i) + ": '" +
                      corpus.vocabulary[i] + "' vs '" + m.text_vocab[i] + "')");
      if (corpus.vocabulary.size() > m.text_vocab.size())
        throw Error("'" + d->corpus + "' has words the bundle's vocabulary lacks");
      const TokenizedCorpus held_out = d->held_out.empty() ? TokenizedCorpus{} : TokenizedCorpus::load(d->held_out);
      const Transformer target(m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), at::kCPU), at::kCPU);
      const VqModel vq = VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU);
      std::cout << "drafter (" << d->objective << "): " << parameter_count(drafter_tensor_specs(m.target)) << " parameters for "
                << m.name << "'s target, " << corpus.size() << " training images, " << d->params.schedule.steps << " steps of "
                << d->params.batch << "\n";
      const TensorMap weights = train_drafter(target, vq.normalized_codebook(), d->params, d->out, corpus, held_out,
                                              [](const std::string& line) { std::cout << line << std::endl; }, &g_stop);
      save_tensors(d->out + "/drafter.safetensors", weights);
      std::cout << "wrote " << d->out << "/drafter.safetensors\n";
      if (d->install && !g_stop) {
        const std::string file = "drafter-" + d->objective + ".safetensors";
        save_tensors(m.dir + "/" + file, weights, DType::F16);
        m.drafters[d->objective] = {file, d->objective};
        write_manifest(m, m.dir);
        std::cout << "installed as drafter '" << d->objective << "' in " << m.dir << "\n";
      }
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  // The target's own images at the bundle's sampling, as a corpus: self-distillation data for drafters.
  struct SamplesArgs {
    std::string bundle, out;
    int count = 256;
    std::uint64_t scene_seed = 960000000;
    int threads = 2;
  };
  auto sa = std::make_shared<SamplesArgs>();
  CLI::App* samples = train->add_subcommand("samples", "Generate the target's own images (ar, the bundle's sampling) as a corpus");
  samples->add_option("--bundle", sa->bundle, "Bundle")->required();
  samples->add_option("--out", sa->out, "Corpus file (.safetensors)")->required();
  samples->add_option("--count", sa->count, "Images")->check(CLI::Range(1, 1000000))->capture_default_str();
  samples->add_option("--scene-seed", sa->scene_seed, "Captions of shapes scenes from this seed on")->capture_default_str();
  samples->add_option("--threads", sa->threads, "LibTorch threads")->capture_default_str();
  samples->final_callback([sa] {
    const int rc = run_reporting_errors([&] {
      EngineParams ep;
      ep.bundle_dir = sa->bundle;
      ep.device = "cpu";
      ep.threads = sa->threads;
      const auto engine = Engine::load(ep);
      const BundleManifest m = read_manifest(sa->bundle);
      const TextVocabulary vocabulary(m.text_vocab);
      TokenizedCorpus corpus;
      corpus.vocabulary = m.text_vocab;
      std::vector<at::Tensor> codes;
      for (int i = 0; i < sa->count && !g_stop; ++i) {
        GenerateParams p;
        p.prompt = data::sample_scene(sa->scene_seed + i).caption();
        p.seed = sa->scene_seed + i;
        p.sampling = engine->info().sampling;
        const auto tokens = engine->generate(p).tokens;
        codes.push_back(at::tensor(std::vector<std::int64_t>(tokens.begin(), tokens.end()), at::kLong));
        corpus.words.push_back(vocabulary.encode(p.prompt));
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
}

}  // namespace speculum::cli
