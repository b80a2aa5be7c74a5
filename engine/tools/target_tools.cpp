// The target's tools: training it, MuLo-SD's low-resolution drafter (a target at a smaller grid), and assembling a
// bundle from a VQ run and a target run.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "error.h"
#include "models/device.h"
#include "data/shapes_scene.h"
#include "models/vq_model.h"
#include "tools/tool_support.h"

namespace speculum {
namespace {

// The default target: a small LlamaGen GPT (about 3.7M parameters at the default shape) reading captions through a
// word-level encoder. The grid is the corpus's (16x16 for 64 px scenes; 8x8 for MuLo-SD's low-resolution drafter).
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

// `corpus` at a grid `factor` times smaller: each image decoded with the bundle's tokenizer, average-pooled by
// `factor` and encoded again (as tokenize_scenes encodes downscaled renders); words and classes kept.
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

void train_target_run(const TargetTrainRequest& request, const ToolCallbacks& callbacks) {
  at::set_num_threads(request.threads);
  resolve_device(request.params.device);  // an unavailable device fails before anything is written
  const TokenizedCorpus corpus = load_corpora(request.corpora);
  if (corpus.vocabulary.empty()) throw Error("'" + request.corpora.front() + "' carries no vocabulary (re-run train tokenize)");
  // A resumed run keeps the architecture it was started with; a new one records it for assemble_bundle.
  const std::string& out = request.out;
  const bool resuming = std::filesystem::exists(checkpoint_dir(out)) && std::filesystem::exists(out + "/speculum.json");
  const BundleManifest m = resuming ? read_manifest(out) : default_manifest(tools::read_vq_run(request.vq_run), corpus, request.shape);
  if (!resuming && !request.params.init_from.empty() && read_manifest(request.params.init_from).text_vocab != corpus.vocabulary)
    throw Error("init_from '" + request.params.init_from + "' was trained on another vocabulary than the corpus");
  if (!resuming) {
    std::filesystem::create_directories(out);
    write_manifest(m, out);
  }
  const TokenizedCorpus held_out = request.held_out.empty() ? TokenizedCorpus{} : TokenizedCorpus::load(request.held_out);
  tools::report(callbacks, "target: " + std::to_string(parameter_count(gpt_tensor_specs(m.target))) + " parameters, " +
                               std::to_string(corpus.size()) + " training images, " + std::to_string(request.params.schedule.steps) +
                               " steps of " + std::to_string(request.params.batch));
  TargetTrainParams params = request.params;
  if (params.caption_contrast > 0 && params.foil_groups.empty()) params.foil_groups = data::caption_foil_groups();
  if ((params.contrast_exchange > 0 || params.contrast_copy > 0) && params.exchange_groups.empty()) params.exchange_groups = data::caption_exchange_groups();
  if ((params.preference > 0) != !request.judged.empty())
    throw Error(params.preference > 0 ? "--preference needs the target's judged samples (--judged CORPUS, from train samples --verdicts)"
                                      : "--judged samples are for the preference loss; give its weight (--preference W)");
  const TokenizedCorpus judged = request.judged.empty() ? TokenizedCorpus{} : load_corpora(request.judged);
  if (!request.judged.empty() && judged.vocabulary != corpus.vocabulary)
    throw Error("'" + request.judged.front() + "' numbers its words differently from the training corpus (judge samples of a "
                "bundle trained on it)");
  train_target(m.target, params, out, corpus, held_out, tools::progress_of(callbacks), callbacks.stop, judged);
}

void install_low_res_drafter(const std::string& run_dir, const std::string& bundle_dir, const ToolCallbacks& callbacks) {
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
  save_tensors(m.low_res_drafter_path(),
               load_tensors(SafetensorsFile::open(tools::final_run_weights(run_dir)), gpt_tensor_specs(run.target), at::kCPU),
               DType::F16);
  write_manifest(m, bundle_dir);
  tools::report(callbacks, "installed " + std::to_string(run.target.grid_rows) + "x" + std::to_string(run.target.grid_cols) +
                               " low-resolution drafter in " + m.dir);
}

void train_low_res_run(const LowResTrainRequest& request, const ToolCallbacks& callbacks) {
  const FrozenTargetRun& f = request.run;
  const int factor = request.factor;
  if (std::find(kLowResFactors.begin(), kLowResFactors.end(), factor) == kLowResFactors.end())
    throw Error("low-resolution factor " + std::to_string(factor) + ": allowed 2 or 4");
  at::set_num_threads(f.threads);
  TargetTrainParams params = request.params;
  params.device = f.device;
  resolve_device(params.device);
  const BundleManifest m = read_manifest(f.bundle);
  BundleManifest run = m;  // the target's architecture and conditioning at the smaller grid, without the trained parts
  run.drafters.clear();
  run.ssd_heads.reset();
  run.low_res_drafter.reset();
  run.target.grid_rows = m.target.grid_rows / factor;
  run.target.grid_cols = m.target.grid_cols / factor;
  run.image_size = m.image_size / factor;
  if (run.target.grid_rows * factor != m.target.grid_rows || run.target.grid_cols * factor != m.target.grid_cols)
    throw Error("factor " + std::to_string(factor) + " does not divide bundle '" + m.dir + "''s " +
                std::to_string(m.target.grid_rows) + "x" + std::to_string(m.target.grid_cols) + " grid");
  // Samples at the bundle's grid, checked against it, then through its tokenizer at the smaller grid.
  const auto downscaled = [&](const TokenizedCorpus& samples) {
    check_corpus(samples, m.target);
    return downscaled_corpus(samples, VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU), m.target.grid_rows,
                             m.target.grid_cols, factor);
  };
  const std::string low_corpus = f.out + "/low-res-corpus.safetensors";
  if (!std::filesystem::exists(low_corpus)) {  // made once; a resumed run trains on the same tokens
    const TokenizedCorpus corpus = downscaled(load_corpora(f.corpora));
    std::filesystem::create_directories(f.out);
    corpus.save(low_corpus, m.target.cls_token_num);
    write_manifest(run, f.out);
  }
  params.init_from = f.bundle;
  if (m.target.condition == ConditionKind::Class && !m.target.class_null_row) params.caption_dropout = 0;  // no null class
  TokenizedCorpus corpus = TokenizedCorpus::load(low_corpus);
  TokenizedCorpus held_out = f.held_out.empty() ? TokenizedCorpus{} : downscaled(TokenizedCorpus::load(f.held_out));
  tools::encode_corpus_captions(corpus, m, callbacks);
  tools::encode_corpus_captions(held_out, m, callbacks);
  tools::report(callbacks, "low-resolution drafter: " + std::to_string(run.target.grid_rows) + "x" +
                               std::to_string(run.target.grid_cols) + " grid, " + std::to_string(corpus.size()) + " images, " +
                               std::to_string(params.schedule.steps) + " steps of " + std::to_string(params.batch));
  train_target(read_manifest(f.out).target, params, f.out, corpus, held_out, tools::progress_of(callbacks), callbacks.stop);
  if (request.install && !tools::stopped(callbacks)) install_low_res_drafter(f.out, f.bundle, callbacks);
}

void assemble_bundle(const BundleRequest& request, const ToolCallbacks& callbacks) {
  request.sampling.validate();
  BundleManifest m = read_manifest(request.target_run);
  m.sampling = request.sampling;
  // The matrices run in the format they are stored in: f16 storage loses nothing more by running in f16, at half
  // the bytes per decode step (docs/benchmarks/studies.md, "Weight formats").
  m.weight_format = request.fp16 ? WeightFormat::F16 : WeightFormat::F32;
  const DType storage = request.fp16 ? DType::F16 : DType::F32;
  std::filesystem::create_directories(request.out);
  save_tensors(request.out + "/" + m.target_weights,
               load_tensors(SafetensorsFile::open(tools::final_run_weights(request.target_run)), gpt_tensor_specs(m.target), at::kCPU),
               storage);
  save_tensors(request.out + "/" + m.tokenizer_weights,
               load_tensors(SafetensorsFile::open(request.vq_run + "/vq.safetensors"), vq_tensor_specs(m.tokenizer), at::kCPU), storage);
  write_manifest(m, request.out);
  tools::report(callbacks, "wrote bundle " + request.out);
}

}  // namespace speculum
