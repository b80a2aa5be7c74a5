// Engine: bundle loading, request validation, and the generation loop around a Method.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <list>
#include <mutex>
#include <sstream>
#include <unistd.h>

#include "decoding/method.h"
#include "io/bundle.h"
#include "io/bundle_fingerprint.h"
#include "io/draft_size_file.h"
#include "io/safetensors.h"
#include "io/json_fields.h"
#include "io/t5_folder.h"
#include "models/t5_captions.h"
#include "models/text_vocabulary.h"
#include "models/device.h"
#include "models/drafter.h"
#include "models/linear_kernels.h"
#include "models/spatial_heads.h"
#include "models/transformer.h"
#include "models/vq_model.h"
#include "io/prompts_file.h"
#include "text/utf8.h"
#include "speculum.h"

namespace speculum {
namespace {

// A prompt is one line of UTF-8 text: a control character (a NUL, a line break, DEL, a terminal escape) is refused
// wherever a prompt enters, not split on or cleaned away word by word.
void check_prompt_characters(const std::string& prompt) {
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    const auto c = static_cast<unsigned char>(prompt[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      throw Error(std::string("a control character (") + hex + ") at byte " + std::to_string(i) +
                  ": the prompt must be one line of plain text");
    }
  }
  // Decoding replaces every byte that is not UTF-8 (and only those) with U+FFFD: a prompt that changes on the way back
  // holds some. Refused here, not when a trace, a PNG's request or a corpus writes the prompt as JSON after the run.
  if (wide_to_utf8(utf8_to_wide(prompt)) != prompt) throw Error("bytes that are not UTF-8: the prompt must be UTF-8 text");
}

// LANTERN's default neighbourhood (k = 1000); the table is [V, k] ints, 64 MiB for LlamaGen's 16,384 codes.
constexpr int kLanternMaxNeighbours = 1000;

void log_line(const LogCallback& log, LogLevel level, const std::string& text) {
  if (log) return log(level, text);
  switch (level) {
    case LogLevel::Debug: spdlog::debug(text); break;
    case LogLevel::Info: spdlog::info(text); break;
    case LogLevel::Warn: spdlog::warn(text); break;
    case LogLevel::Error: spdlog::error(text); break;
  }
}

TensorMap load_checked(const std::string& path, const std::vector<TensorSpec>& specs, at::Device device,
                       const LogCallback& log) {
  const WeightCheck check = check_weights(path, specs);
  if (!check.unexpected.empty())
    log_line(log, LogLevel::Warn, path + ": ignoring " + std::to_string(check.unexpected.size()) +
                                      " tensors the architecture does not use, e.g. '" + check.unexpected.front() + "'");
  return load_tensors(SafetensorsFile::open(path), specs, device);
}

Image to_image(const at::Tensor& decoded) {  // [1, 3, H, W] in [-1, 1]
  const at::Tensor bytes = ((decoded[0].permute({1, 2, 0}) + 1.0) * 127.5)
                               .round()
                               .clamp(0, 255)
                               .to(at::kCPU, at::kByte)
                               .contiguous();
  Image image{static_cast<int>(bytes.size(1)), static_cast<int>(bytes.size(0)), {}};
  image.rgb.assign(bytes.data_ptr<std::uint8_t>(), bytes.data_ptr<std::uint8_t>() + bytes.numel());
  return image;
}

}  // namespace

struct Engine::Impl {
  BundleManifest manifest;
  int threads = 0;  // EngineParams::threads: set on the thread that calls generate()
  at::Device device = at::kCPU;
  std::unique_ptr<Transformer> target;
  std::unique_ptr<VqModel> tokenizer;
  TextVocabulary vocabulary;
  std::unique_ptr<T5Captions> t5;  // T5 bundles
  // The encoder runs once per prompt: every method, pane and drafter of a request reuses its output.
  mutable std::mutex caption_mutex;
  mutable std::list<std::pair<std::string, std::shared_ptr<const EncodedCaption>>> captions;  // most recent first
  std::map<std::string, std::unique_ptr<Drafter>> drafters;
  std::unique_ptr<SpatialHeads> ssd_heads;
  std::unique_ptr<Transformer> low_res_drafter;
  std::unique_ptr<CodebookGeometry> geometry;
  MethodResources resources;
  ModelInfo info;
  std::mutex generate_mutex;

  void load_t5(const EngineParams& params, const LogCallback& log);
  std::shared_ptr<const EncodedCaption> encoded_caption(const std::string& prompt) const;
  // The prefix of `model` (the target, or a drafter with the target's conditioning) for the request.
  ConditionPrefix condition(const Transformer& model, const GenerateParams& p, int rows) const;
  at::Tensor codes(const std::vector<int>& tokens, int rows, int cols) const;
  Preview preview(const std::vector<int>& tokens, int rows, int cols) const;
  at::Tensor codes(const std::vector<int>& tokens) const { return codes(tokens, info.grid_rows, info.grid_cols); }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

namespace {

constexpr std::size_t kCachedCaptions = 16;

// What runs: the request's options, the bundle's recommendations for those it leaves out, auto draft sizes made concrete.
GenerateParams with_bundle_options(GenerateParams p, const ModelInfo& info) {
  if (const auto recommended = info.method_options.find(p.method); recommended != info.method_options.end())
    p.method_options.insert(recommended->second.begin(), recommended->second.end());  // insert keeps the request's
  for (const MethodInfo& method : method_catalog())
    if (method.name == p.method)
      p.method_options = resolve_draft_sizes(method, p.method_options, info.draft_sizes ? &*info.draft_sizes : nullptr);
  return p;
}

void check_recommended_options(const BundleManifest& m) {
  for (const auto& [method, options] : m.method_options) {
    try {
      check_recommended_method_options(method, options);
    } catch (const Error& e) {
      throw Error(m.dir + "/" + kManifestName + ": method_options." + short_text(method) + ": " + e.what());
    }
  }
}

}  // namespace

void Engine::Impl::load_t5(const EngineParams& params, const LogCallback& log) {
  const BundleManifest& m = manifest;
  const std::string dir = params.t5_folder.empty() ? m.t5_folder() : params.t5_folder;
  T5Folder folder;
  try {
    folder = open_t5_folder(dir);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (bundle '" + m.name + "' reads its captions with this T5 encoder; give another folder with --t5)");
  }
  const std::string found = t5_fingerprint(folder);
  if (found != m.t5->fingerprint)
    throw Error("T5 folder '" + dir + "' is not the encoder bundle '" + m.name + "' was converted with: the bundle expects '" +
                m.t5->fingerprint + "', the folder holds '" + found + "'");
  if (folder.config.d_model != m.target.caption_dim)
    throw Error("T5 folder '" + dir + "': d_model " + std::to_string(folder.config.d_model) + " differs from the target's caption_dim " +
                std::to_string(m.target.caption_dim));
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> ignored;
  t5 = std::make_unique<T5Captions>(folder, device, m.t5->clean_captions, m.target.cls_token_num, &ignored);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream line;
  line << "T5 encoder from " << dir << " (" << t5_layout_name(folder.layout) << ", " << t5->encoder().parameter_count() / 1e6
       << " M parameters, computed in " << at::toString(t5->encoder().compute_type()) << ") in " << static_cast<int>(ms) << " ms";
  if (!ignored.empty()) line << "; ignored " << ignored.size() << " tensors it does not need, e.g. '" << ignored.front() << "'";
  log_line(log, LogLevel::Info, line.str());
  info.text_encoder = dir + ": " + found + (m.t5->clean_captions ? "; prompts cleaned as LlamaGen does" : "");
}

std::unique_ptr<Engine> Engine::load(const EngineParams& params, const LogCallback& log) {
  const auto start = std::chrono::steady_clock::now();
  if (params.threads > 0) at::set_num_threads(params.threads);
  auto impl = std::make_unique<Impl>();
  impl->threads = params.threads;
  impl->manifest = read_manifest(params.bundle_dir);
  const BundleManifest& m = impl->manifest;
  impl->device = resolve_device(params.device);
  const WeightFormat format = params.weights.empty() ? m.weight_format : parse_weight_format(params.weights);
  if (format == WeightFormat::Q8 && impl->device.is_cuda())
    throw Error("weights q8 run on the CPU only (LibTorch has no 8-bit product on CUDA); use f16 or bf16 there");
  c10::InferenceMode inference;
  impl->target = std::make_unique<Transformer>(
      m.target, load_checked(m.target_path(), gpt_tensor_specs(m.target), impl->device, log), impl->device, format);
  impl->tokenizer = std::make_unique<VqModel>(
      m.tokenizer, load_checked(m.tokenizer_path(), vq_tensor_specs(m.tokenizer), impl->device, log), impl->device);
  impl->vocabulary = TextVocabulary(m.text_vocab);
  if (m.t5) impl->load_t5(params, log);
  MethodResources& resources = impl->resources;
  resources.bundle = m.dir;
  resources.class_conditioned = m.target.condition == ConditionKind::Class;
  resources.t5_conditioned = m.target.caption_source == CaptionSource::T5;
  for (const auto& [name, entry] : m.drafters) {
    impl->drafters[name] = std::make_unique<Drafter>(
        *impl->target, load_checked(m.drafter_path(name), drafter_tensor_specs(m.target, entry.convention), impl->device, log),
        entry.convention, entry.norm_eps, entry.rope_grid, format);
    resources.drafters[name] = impl->drafters[name].get();
  }
  if (const auto& h = m.ssd_heads) {
    impl->ssd_heads = std::make_unique<SpatialHeads>(
        *impl->target, load_checked(m.ssd_heads_path(), spatial_heads_tensor_specs(m.target, h->horizontal, h->vertical), impl->device, log),
        h->horizontal, h->vertical, format);
    resources.ssd_heads = impl->ssd_heads.get();
  }
  if (m.low_res_drafter) {
    impl->low_res_drafter = std::make_unique<Transformer>(
        m.low_res_config(), load_checked(m.low_res_drafter_path(), gpt_tensor_specs(m.low_res_config()), impl->device, log), impl->device,
        format);
    resources.low_res_drafter = impl->low_res_drafter.get();
  }
  resources.tokenizer = impl->tokenizer.get();
  impl->geometry = std::make_unique<CodebookGeometry>(impl->tokenizer->normalized_codebook(), kLanternMaxNeighbours);
  resources.geometry = impl->geometry.get();
  resources.soft_bounds = m.soft_verification;

  ModelInfo& info = impl->info;
  const GptConfig& g = m.target;
  info.name = m.name;
  info.bundle_dir = m.dir;
  info.device = impl->device.str();
  info.weight_format = weight_format_name(format);
  info.kernels = kernel_level_name(kernel_level());
  info.decode_step_bytes = impl->target->decode_step_weight_bytes();
  info.text_conditioned = g.condition == ConditionKind::Text;
  info.cfg_available = info.text_conditioned || g.class_null_row;
  info.sampling = m.sampling;
  check_recommended_options(m);
  info.method_options = m.method_options;
  for (const MethodInfo& method : method_catalog()) {
    // Runnable at this bundle's defaults, or (LISA) on the EAGLE drafter: LISA's verification-only ablation, which a
    // bundle with an imported LANTERN drafter and calibrated bounds runs.
    const auto recommended = m.method_options.find(method.name);
    const MethodOptions defaults = recommended == m.method_options.end() ? MethodOptions{} : recommended->second;
    for (const MethodOptions& options : {defaults, MethodOptions{{"lisa_drafter", 0}}}) {
      if (options.count("lisa_drafter") && method.name != "lisa") continue;
      try {
        make_method(method.name, options, resources);
        info.methods.push_back(method.name);
        break;
      } catch (const Error&) {
        // the bundle lacks what this method needs; generate() says what, should it be asked for
      }
    }
  }
  info.draft_size_key = {bundle_fingerprint(m), info.weight_format, info.device,
                         params.threads > 0 ? params.threads : at::get_num_threads(), cpu_description()};
  if (!params.draft_sizes_file.empty()) {
    for (DraftSizeTable& table : read_draft_size_file(params.draft_sizes_file))
      if (table.key == info.draft_size_key) info.draft_sizes = std::move(table);
    log_line(log, LogLevel::Info,
             info.draft_sizes ? "auto draft sizes: " + params.draft_sizes_file + " (measured " + info.draft_sizes->measured_at + ")"
                              : "auto draft sizes: the defaults (" + params.draft_sizes_file + " has no table for " +
                                    info.draft_size_key.to_string() + "; speculum-cli tune measures one)");
  }
  info.classes = m.classes;
  info.text_vocab = m.text_vocab;
  info.free_text = impl->t5 != nullptr;
  info.max_prompt_words = info.text_conditioned ? g.cls_token_num : 0;
  info.grid_rows = g.grid_rows;
  info.grid_cols = g.grid_cols;
  if (const auto& d = m.low_res_drafter) {
    info.low_res_rows = d->grid_rows;
    info.low_res_cols = d->grid_cols;
  }
  info.image_size = m.image_size;
  info.vocab_size = g.vocab_size;
  info.target_parameters = parameter_count(gpt_tensor_specs(g));
  info.tokenizer_parameters = parameter_count(vq_tensor_specs(m.tokenizer));
  std::ostringstream summary;
  summary << "dim " << g.dim << ", " << g.n_layer << " layers, " << g.n_head << " heads, ffn " << g.ffn_hidden()
          << ", vocab " << g.vocab_size << ", grid " << g.grid_rows << "x" << g.grid_cols << ", "
          << (info.text_conditioned ? "text" : "class") << " conditioning (" << g.cls_token_num << " prefix tokens)";
  info.target_summary = summary.str();
  if (const auto& guide = m.prompt_guide; guide && info.text_conditioned) {
    for (const std::string& example : guide->examples) {  // a guide must not suggest what the model cannot read
      GenerateParams probe;
      probe.prompt = example;
      try {
        impl->condition(*impl->target, probe, 1);
      } catch (const Error& e) {
        throw Error(m.dir + "/speculum.json: prompt_guide example '" + example + "': " + e.what());
      }
    }
    info.prompt_grammar = guide->grammar;
    info.example_prompts = guide->examples;
    info.examples_chosen_by = guide->chosen_by;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log_line(log, LogLevel::Info, "loaded bundle '" + m.name + "' from " + m.dir + " on " + info.device + " in " +
                                    std::to_string(static_cast<int>(ms)) + " ms: " + info.target_summary);
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const ModelInfo& Engine::info() const { return impl_->info; }

std::shared_ptr<const EncodedCaption> Engine::Impl::encoded_caption(const std::string& prompt) const {
  {
    std::lock_guard lock(caption_mutex);
    for (auto it = captions.begin(); it != captions.end(); ++it)
      if (it->first == prompt) {
        captions.splice(captions.begin(), captions, it);
        return it->second;
      }
  }
  c10::InferenceMode inference;
  auto encoded = std::make_shared<const EncodedCaption>(t5->encode(prompt));
  std::lock_guard lock(caption_mutex);
  captions.emplace_front(prompt, encoded);
  if (captions.size() > kCachedCaptions) captions.pop_back();
  return encoded;
}

ConditionPrefix Engine::Impl::condition(const Transformer& model, const GenerateParams& p, int rows) const {
  check_prompt_characters(p.prompt);
  if (info.text_conditioned) {
    if (p.class_id >= 0) throw Error("this bundle is text-conditioned: give a prompt, not a class");
    if (t5) {
      const auto caption = encoded_caption(p.prompt);
      return model.caption_prefix(caption->features, caption->slots, rows);
    }
    return model.text_prefix(vocabulary.encode(p.prompt), rows);
  }
  int class_id = p.class_id;
  if (class_id < 0 && !p.prompt.empty()) {
    const auto it = std::find(info.classes.begin(), info.classes.end(), p.prompt);
    if (it == info.classes.end())
      throw Error("'" + p.prompt + "' is not a class of this bundle (give --class 0.." +
                  std::to_string(info.classes.size() - 1) + " or a class name, e.g. '" + info.classes.front() + "')");
    class_id = static_cast<int>(it - info.classes.begin());
  }
  return model.class_prefix(std::max(class_id, 0), rows);
}

std::string Engine::prompt_warning(const std::string& prompt) const {
  if (!impl_->t5) return {};
  try {
    const TokenizedCaption tokens = impl_->t5->tokenize(prompt);
    if (tokens.dropped_text.empty()) return {};
    return "the prompt is " + std::to_string(tokens.pieces + 1) + " T5 tokens; the model reads " +
           std::to_string(impl_->t5->max_tokens()) + " (eos included), so this is cut: '" + short_text(tokens.dropped_text, 200) + "'";
  } catch (const Error&) {
    return {};  // check_prompt says what is wrong
  }
}

std::string Engine::check_prompt(const std::string& prompt) const {
  if (impl_->t5) {
    try {
      check_prompt_characters(prompt);
      impl_->t5->tokenize(prompt);
      return {};
    } catch (const Error& e) {
      return e.what();
    }
  }
  try {
    GenerateParams params;
    params.prompt = prompt;
    impl_->condition(*impl_->target, params, 1);
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

std::vector<std::string> Engine::read_prompts(const std::string& path) const {
  std::vector<std::string> prompts;
  for (const PromptLine& line : read_prompts_file(path)) {
    if (const std::string problem = check_prompt(line.text); !problem.empty())
      throw Error("prompts file '" + path + "' line " + std::to_string(line.line) + ": " + problem);
    prompts.push_back(line.text);
  }
  return prompts;
}

at::Tensor Engine::Impl::codes(const std::vector<int>& tokens, int rows, int cols) const {
  if (static_cast<int>(tokens.size()) != rows * cols)
    throw RequestError("expected " + std::to_string(rows * cols) + " tokens, got " + std::to_string(tokens.size()));
  std::vector<std::int64_t> filled(tokens.begin(), tokens.end());
  for (auto& t : filled) {
    if (t >= info.vocab_size) throw RequestError("token " + std::to_string(t) + " is outside the codebook (" + std::to_string(info.vocab_size) + " codes)");
    if (t < 0) t = tokenizer->neutral_code();
  }
  return at::tensor(filled, at::kLong).reshape({1, rows, cols});
}

namespace {

// LibTorch's OpenMP thread count belongs to the calling thread. Decoding for display runs on one: a window
// decodes previews beside a running generation, and a second team of threads on the same cores slows the
// generation down (scripts/studio-speed.sh).
class OneThreadHere {
 public:
  OneThreadHere() : before_(at::get_num_threads()) { at::set_num_threads(1); }
  ~OneThreadHere() { at::set_num_threads(before_); }
  OneThreadHere(const OneThreadHere&) = delete;
  OneThreadHere& operator=(const OneThreadHere&) = delete;

 private:
  int before_;
};

}  // namespace

Image Engine::decode(const std::vector<int>& tokens) const {
  if (std::any_of(tokens.begin(), tokens.end(), [](int t) { return t < 0; }))
    throw RequestError("decode needs a complete grid; use preview() for a partial one");
  const OneThreadHere one_thread;
  c10::InferenceMode inference;
  return to_image(impl_->tokenizer->decode(impl_->codes(tokens)));
}

Preview Engine::preview(const std::vector<int>& tokens) const {
  return impl_->preview(tokens, impl_->info.grid_rows, impl_->info.grid_cols);
}

std::vector<Image> Engine::token_patches(const std::vector<int>& tokens) const {
  if (tokens.empty()) return {};
  for (int t : tokens)
    if (t < 0 || t >= impl_->info.vocab_size)
      throw RequestError("token " + std::to_string(t) + " is outside the codebook (" + std::to_string(impl_->info.vocab_size) + " codes)");
  const OneThreadHere one_thread;
  c10::InferenceMode inference;
  const at::Tensor codes = at::tensor(std::vector<std::int64_t>(tokens.begin(), tokens.end()), at::kLong)
                               .view({-1, 1, 1})
                               .expand({-1, 3, 3})
                               .contiguous()
                               .to(impl_->device);
  const at::Tensor decoded = impl_->tokenizer->decode(codes);  // [n, 3, 3s, 3s]
  const std::int64_t side = decoded.size(3) / 3;
  std::vector<Image> patches;
  for (std::int64_t i = 0; i < decoded.size(0); ++i)
    patches.push_back(to_image(decoded.narrow(0, i, 1).narrow(2, side, side).narrow(3, side, side)));
  return patches;
}

Preview Engine::preview_low_res(const std::vector<int>& tokens) const {
  if (impl_->info.low_res_rows == 0) throw Error("bundle '" + impl_->info.name + "' has no low-resolution drafter");
  return impl_->preview(tokens, impl_->info.low_res_rows, impl_->info.low_res_cols);
}

Preview Engine::Impl::preview(const std::vector<int>& tokens, int rows, int cols) const {
  const OneThreadHere one_thread;
  c10::InferenceMode inference;
  Preview p;
  p.image = to_image(tokenizer->decode(codes(tokens, rows, cols)));
  p.total = static_cast<int>(tokens.size());
  for (int t : tokens) {
    p.known.push_back(t >= 0);
    p.committed += t >= 0;
  }
  return p;
}

namespace {

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

// Seconds to read `buffer` once (LibTorch's vectorised, threaded sum touches every byte).
double read_seconds(const at::Tensor& buffer) {
  const auto start = std::chrono::steady_clock::now();
  buffer.sum().item<float>();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::int64_t last_level_cache_bytes() {
#ifdef _SC_LEVEL3_CACHE_SIZE
  return std::max<long>(0, sysconf(_SC_LEVEL3_CACHE_SIZE));
#else
  return 0;
#endif
}

}  // namespace

// Times target forwards of n new tokens after the prefix and `context` image tokens, each undone after timing.
class Engine::ForwardTimer {
 public:
  ForwardTimer(Impl& impl, int context) : impl_(impl), context_(context), cache_(impl.target->make_cache(rows(impl), 0)) {
    GenerateParams request;
    if (impl.info.text_conditioned && !impl.info.free_text) request.prompt = impl.info.text_vocab.front();
    const ConditionPrefix prefix = impl.condition(*impl.target, request, rows(impl));
    impl.target->forward(DecodeSession::prefix_input(*impl.target, prefix), cache_);
    if (context > 0) impl.target->forward(input(0, context), cache_);
    base_ = cache_.length();
  }
  double ms(int new_tokens) {
    const auto start = std::chrono::steady_clock::now();
    impl_.target->forward(input(context_, new_tokens), cache_);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    cache_.truncate(base_);
    return ms;
  }

 private:
  static int rows(const Impl& impl) { return impl.info.sampling.uses_cfg() ? 2 : 1; }
  ForwardInput input(int first, int count) const {
    ForwardInput in;
    in.tokens = at::full({count}, impl_.tokenizer->neutral_code(), at::kLong);
    for (int i = first; i < first + count; ++i) in.positions.push_back(impl_.manifest.target.cls_token_num + i);
    return in;
  }
  Impl& impl_;
  int context_;
  KVCache cache_;
  int base_ = 0;
};

std::vector<ForwardCost> Engine::measure_forward_cost(const std::vector<int>& new_tokens, int context, int repeats) const {
  std::lock_guard lock(impl_->generate_mutex);
  c10::InferenceMode inference;
  const GptConfig& g = impl_->manifest.target;
  const int biggest = *std::max_element(new_tokens.begin(), new_tokens.end());
  if (context < 0 || biggest < 1 || context + biggest > g.image_tokens())
    throw Error("forward cost: context " + std::to_string(context) + " + " + std::to_string(biggest) + " new tokens exceed the " +
                std::to_string(g.image_tokens()) + "-token grid");
  ForwardTimer timer(*impl_, context);
  std::vector<ForwardCost> costs;
  for (const int n : new_tokens) {
    std::vector<double> ms;
    for (int r = 0; r < repeats + 2; ++r) {  // two untimed
      const double t = timer.ms(n);
      if (r >= 2) ms.push_back(t);
    }
    costs.push_back({n, median(ms)});
  }
  return costs;
}

StepRoofline Engine::measure_step_roofline(int pairs) const {
  std::lock_guard lock(impl_->generate_mutex);
  c10::InferenceMode inference;
  StepRoofline r;
  r.step_bytes = std::max<std::int64_t>(impl_->info.decode_step_bytes, 1 << 20);
  ForwardTimer timer(*impl_, impl_->manifest.target.image_tokens() / 2);
  const at::Tensor step_sized = at::ones({r.step_bytes / 4}, at::kFloat);
  std::vector<double> step_ms, read_ms, ratios;
  for (int i = 0; i < std::max(1, pairs) + 2; ++i) {  // two untimed
    timer.ms(1);  // a step after a step, as in decoding: the team's threads are awake again after the read's
    const double step = timer.ms(1), read = 1e3 * read_seconds(step_sized);
    if (i < 2) continue;
    step_ms.push_back(step), read_ms.push_back(read), ratios.push_back(step / read);
  }
  r.step_ms = median(step_ms), r.read_ms = median(read_ms), r.step_over_read = median(ratios);
  // Main memory: a buffer well beyond the last-level cache, so that no repeat finds it there.
  r.last_level_cache_bytes = last_level_cache_bytes();
  r.memory_probe_bytes = std::max<std::int64_t>({std::int64_t(256) << 20, 2 * r.last_level_cache_bytes, 2 * r.step_bytes});
  const at::Tensor beyond_cache = at::ones({r.memory_probe_bytes / 4}, at::kFloat);
  std::vector<double> seconds;
  for (int i = 0; i < 6; ++i) {  // one untimed
    const double s = read_seconds(beyond_cache);
    if (i > 0) seconds.push_back(s);
  }
  r.memory_gbs = static_cast<double>(beyond_cache.nbytes()) / median(seconds) / 1e9;
  return r;
}

double Engine::measure_caption_cost(const std::string& prompt, int repeats) const {
  if (!impl_->t5) throw Error("bundle '" + impl_->info.name + "' reads no T5 captions");
  std::lock_guard lock(impl_->generate_mutex);
  if (impl_->threads > 0) at::set_num_threads(impl_->threads);
  c10::InferenceMode inference;
  std::vector<double> ms;
  for (int r = 0; r < std::max(1, repeats) + 1; ++r) {  // one untimed
    const auto start = std::chrono::steady_clock::now();
    impl_->t5->encode(prompt);
    if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return median(ms);
}

GenerateResult Engine::generate(const GenerateParams& request, const Callbacks& cb, const std::atomic<bool>* cancel) {
  std::lock_guard lock(impl_->generate_mutex);
  if (impl_->threads > 0) at::set_num_threads(impl_->threads);  // this thread's team (a worker thread starts with the default)
  const GenerateParams params = with_bundle_options(request, impl_->info);  // what runs, and what the trace records
  c10::InferenceMode inference;
  const int rows = params.sampling.uses_cfg() ? 2 : 1;
  // Everything that can refuse the request happens here, before the run: what fails is the request's fault.
  std::unique_ptr<Method> method;
  ConditionPrefix prefix;
  try {
    params.sampling.validate();
    if (params.sampling.uses_cfg() && !impl_->info.cfg_available)
      throw Error("CFG is unavailable for bundle '" + impl_->info.name + "': its class table has no null row (the model "
                  "was trained without class dropout), so there is no unconditional branch; use cfg 1");
    method = make_method(params.method, params.method_options, impl_->resources);
    prefix = impl_->condition(*impl_->target, params, rows);
  } catch (const RequestError&) {
    throw;
  } catch (const Error& e) {
    throw RequestError(e.what());
  }
  KVCache cache = impl_->target->make_cache(rows, method->extra_cache_slots());
  log_line(cb.log, LogLevel::Info, "generate: " + params.to_string());
  if (const std::string warning = prompt_warning(params.prompt); !warning.empty()) log_line(cb.log, LogLevel::Warn, warning);

  MetricsAccumulator metrics;
  auto sink = [&](const Event& e) {
    metrics.apply(e);
    if (cb.event) cb.event(e);
  };
  int last_preview = 0;
  auto on_commit = [&](const std::vector<int>& tokens, int committed) {
    if (cb.progress) cb.progress(committed, static_cast<int>(tokens.size()));
    if (cb.preview && params.preview_every > 0 && committed - last_preview >= params.preview_every) {
      last_preview = committed;
      cb.preview(preview(tokens));
    }
  };
  DecodeSession session(*impl_->target, cache, std::move(prefix), params.sampling, params.seed, sink, on_commit, cancel);
  session.set_condition_source([&](const Transformer& model) { return impl_->condition(model, params, rows); });

  const auto start = std::chrono::steady_clock::now();
  const bool low_res = params.method == "mulo";
  sink(RunBegin{params.method, params.to_json(), impl_->info.grid_rows, impl_->info.grid_cols, impl_->info.vocab_size,
                low_res ? impl_->info.low_res_rows : 0, low_res ? impl_->info.low_res_cols : 0});
  method->run(session);
  const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  sink(RunEnd{session.committed(), session.nfe(), wall, session.forward_ms(), !session.complete(), session.draft_ms()});

  GenerateResult result;
  result.tokens = session.tokens();
  result.cancelled = !session.complete();
  result.image = result.cancelled ? preview(result.tokens).image : decode(result.tokens);
  result.metrics = metrics.metrics();
  result.method_options = params.method_options;
  if (cb.preview && params.preview_every > 0 && last_preview != session.committed()) cb.preview(preview(result.tokens));
  return result;
}

const std::vector<MethodInfo>& available_methods() { return method_catalog(); }

void check_request(const GenerateParams& params) {
  check_prompt_characters(params.prompt);
  params.sampling.validate();
  check_method_options(params.method, params.method_options);
}

}  // namespace speculum
