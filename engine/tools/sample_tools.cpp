// The tools that run the target on its own requests: self-samples for drafters (a corpus) and LISA's calibration.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "decoding/codebook_geometry.h"
#include "decoding/soft_calibration.h"
#include "error.h"
#include "io/t5_folder.h"
#include "models/t5_captions.h"
#include "models/text_vocabulary.h"
#include "models/vq_model.h"
#include "sampling/counter_rng.h"
#include "tools/tool_support.h"

namespace speculum {
namespace {

std::vector<int> every_class(const BundleManifest& m) {
  std::vector<int> classes;
  for (int c = 0; c < (m.target.condition == ConditionKind::Class ? m.target.num_classes : 0); ++c) classes.push_back(c);
  return classes;
}

// Sample i's condition: its class (class bundles), a caption from the prompts file, or a shapes caption, drawn from
// `scene_seed` alone (so samples made in chunks and calibration repeat exactly).
void condition_sample(GenerateParams& p, std::uint64_t scene_seed, const std::vector<int>& classes,
                      const std::vector<std::string>& prompts) {
  if (!classes.empty())
    p.class_id = class_of_sample(scene_seed, classes);
  else if (!prompts.empty())
    p.prompt = prompts[scene_seed % prompts.size()];
  else
    p.prompt = data::sample_scene(scene_seed).caption();
}

// The captions a text bundle's samples take from `prompts_file` (Engine::read_prompts); none for an empty name. A T5 bundle must have them; a class bundle takes none.
std::vector<std::string> sample_prompts(const std::string& prompts_file, const BundleManifest& m, const Engine& engine,
                                        const char* what) {
  const bool class_bundle = m.target.condition == ConditionKind::Class;
  if (prompts_file.empty()) {
    if (!class_bundle && m.target.caption_source == CaptionSource::T5)
      throw Error(std::string(what) + ": '" + m.dir + "' reads T5 features: give its captions with --prompts FILE (one per line)");
    return {};
  }
  if (class_bundle) throw Error(std::string(what) + ": '" + m.dir + "' is class-conditioned; it takes classes, not prompts");
  return engine.read_prompts(prompts_file);
}

}  // namespace

int class_of_sample(std::uint64_t seed, const std::vector<int>& classes) {
  if (classes.empty()) throw Error("class_of_sample: no classes to draw from");
  const double u = counter_uniform(seed, RngStream::Data, 0, 0);
  return classes[std::min(classes.size() - 1, static_cast<std::size_t>(u * static_cast<double>(classes.size())))];
}

void generate_samples(const SamplesRequest& request, const ToolCallbacks& callbacks) {
  if (request.count < 1) throw Error("samples: count " + std::to_string(request.count) + " must be at least 1");
  if (request.per_caption < 1) throw Error("samples: per_caption " + std::to_string(request.per_caption) + " must be at least 1");
  if (request.only_passing && !request.judge) throw Error("samples: only_passing needs a judge of the images");
  EngineParams ep;
  ep.bundle_dir = request.bundle;
  ep.device = request.device;
  ep.threads = request.threads;
  const auto engine = Engine::load(ep);
  const BundleManifest m = read_manifest(request.bundle);
  const bool class_bundle = m.target.condition == ConditionKind::Class;
  const bool t5_bundle = !class_bundle && m.target.caption_source == CaptionSource::T5;
  const std::vector<std::string> prompts = sample_prompts(request.prompts_file, m, *engine, "train samples");
  std::vector<int> classes = request.classes;
  if (!class_bundle && !classes.empty()) throw Error("classes: '" + m.dir + "' is text-conditioned, not class-conditioned");
  for (const int c : classes)
    if (c < 0 || c >= m.target.num_classes)
      throw Error("classes: class " + std::to_string(c) + " is outside [0, " + std::to_string(m.target.num_classes) + ")");
  if (classes.empty()) classes = every_class(m);
  const TextVocabulary vocabulary(m.text_vocab);
  TokenizedCorpus corpus;
  corpus.vocabulary = m.text_vocab;
  std::vector<at::Tensor> codes;
  int generated = 0, passes = 0;
  for (int i = 0; i < request.count && !tools::stopped(callbacks); ++i) {
    GenerateParams p;
    p.seed = request.scene_seed + i;
    condition_sample(p, request.scene_seed + i / request.per_caption, classes, prompts);
    p.sampling = engine->info().sampling;
    const GenerateResult result = engine->generate(p);
    ++generated;
    const bool passed = request.judge && request.judge(p, result);
    passes += passed;
    if (passed || !request.only_passing) {
      if (request.judge) corpus.passed.push_back(passed);
      codes.push_back(at::tensor(std::vector<std::int64_t>(result.tokens.begin(), result.tokens.end()), at::kLong));
      if (class_bundle) {
        corpus.words.emplace_back();
        corpus.classes.push_back(p.class_id);
      } else if (t5_bundle) {
        corpus.words.emplace_back();
        corpus.captions.push_back(p.prompt);  // encoded again by T5 when a trainer loads the corpus
      } else {
        corpus.words.push_back(vocabulary.encode(p.prompt));
      }
    }
    if ((i + 1) % 50 == 0)
      tools::report(callbacks, "generated " + std::to_string(i + 1) + " / " + std::to_string(request.count) +
                                   (request.judge ? ", passed " + std::to_string(passes) : ""));
  }
  if (codes.empty())
    throw Error(generated == 0 ? std::string("samples: stopped before the first image; nothing written")
                               : "samples: none of the " + std::to_string(generated) + " images was kept; nothing written");
  corpus.codes = at::stack(codes);
  corpus.save(request.out, m.target.cls_token_num);
  tools::report(callbacks, "wrote " + request.out + " (" + std::to_string(corpus.size()) + " images" +
                               (request.only_passing ? " kept of " + std::to_string(generated) : "") + ")" +
                               (request.judge && !request.only_passing ? ": " + std::to_string(passes) + " passed" : ""));
}

SoftVerificationBounds calibrate_bundle(const CalibrateRequest& request) {
  at::set_num_threads(request.threads);
  EngineParams ep;
  ep.bundle_dir = request.bundle;
  ep.device = "cpu";
  const auto engine = Engine::load(ep);
  BundleManifest m = read_manifest(ep.bundle_dir);
  c10::InferenceMode inference;
  const Transformer target(m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), at::kCPU),
                           at::kCPU);
  const bool class_bundle = m.target.condition == ConditionKind::Class;
  const std::vector<int> classes = every_class(m);
  const std::vector<std::string> prompts = sample_prompts(request.prompts_file, m, *engine, "calibrate");
  const TextVocabulary vocabulary(m.text_vocab);
  std::unique_ptr<T5Captions> t5;
  if (m.t5) t5 = std::make_unique<T5Captions>(open_t5_folder(m.t5_folder()), at::kCPU, m.t5->clean_captions, m.target.cls_token_num);
  const int rows = engine->info().sampling.uses_cfg() ? 2 : 1;
  std::vector<at::Tensor> images;
  std::vector<ConditionPrefix> conditions;
  for (int i = 0; i < request.images; ++i) {
    GenerateParams p;
    p.seed = static_cast<std::uint64_t>(i);
    condition_sample(p, request.scene_seed + i, classes, prompts);
    p.sampling = engine->info().sampling;
    const auto tokens = engine->generate(p).tokens;
    images.push_back(at::tensor(std::vector<std::int64_t>(tokens.begin(), tokens.end()), at::kLong));
    if (class_bundle) {
      conditions.push_back(target.class_prefix(p.class_id, rows));
    } else if (t5) {
      const EncodedCaption caption = t5->encode(p.prompt);
      conditions.push_back(target.caption_prefix(caption.features, caption.slots, rows));
    } else {
      conditions.push_back(target.text_prefix(vocabulary.encode(p.prompt), rows));
    }
  }
  const CodebookGeometry geometry(VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU).normalized_codebook(), 1);
  const SoftVerificationBounds bounds = calibrate_soft_verification(target, geometry.whitened(), at::stack(images), conditions,
                                                                    engine->info().sampling, request.params);
  if (!request.dry_run) {
    m.soft_verification = bounds;
    write_manifest(m, m.dir);
  }
  return bounds;
}

}  // namespace speculum
