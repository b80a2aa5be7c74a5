#include "tools/tool_support.h"

#include <ATen/Parallel.h>

#include <c10/core/InferenceMode.h>

#include <filesystem>
#include <map>

#include "error.h"
#include "io/json_fields.h"
#include "io/t5_folder.h"
#include "models/device.h"
#include "models/t5_captions.h"

namespace speculum::tools {

ProgressLine progress_of(const ToolCallbacks& callbacks) {
  if (callbacks.progress) return callbacks.progress;
  return [](const std::string&) {};
}

void report(const ToolCallbacks& callbacks, const std::string& line) {
  if (callbacks.progress) callbacks.progress(line);
}

bool stopped(const ToolCallbacks& callbacks) { return callbacks.stop && callbacks.stop->load(); }

VqConfig read_vq_run(const std::string& vq_dir) {
  const std::string path = vq_dir + "/tokenizer.json";
  const std::string hint = " (train the tokenizer first: speculum-cli train vq --out " + vq_dir + ")";
  const nlohmann::json doc =
      parse_untrusted_json(read_input_file(path, limits::kMaxSmallTextBytes, "tokenizer file", hint.c_str()), path, 4);
  return read_tokenizer_section(JsonFields(doc, path));
}

std::string final_run_weights(const std::string& run_dir) {
  const std::string ema = checkpoint_dir(run_dir) + "/ema.safetensors";
  return std::filesystem::exists(ema) ? ema : checkpoint_dir(run_dir) + "/weights.safetensors";
}

void encode_corpus_captions(TokenizedCorpus& corpus, const BundleManifest& m, const ToolCallbacks& callbacks) {
  if (!m.t5 || corpus.captions.empty()) return;
  c10::InferenceMode inference;
  const T5Captions t5(open_t5_folder(m.t5_folder()), at::kCPU, m.t5->clean_captions, m.target.cls_token_num);
  std::map<std::string, std::size_t> first_of;  // caption -> the first image that has it
  corpus.caption_features.clear();
  corpus.caption_slots.clear();
  for (std::size_t i = 0; i < corpus.captions.size(); ++i) {
    const auto [it, fresh] = first_of.emplace(corpus.captions[i], i);
    if (fresh) {
      EncodedCaption encoded = t5.encode(corpus.captions[i]);
      corpus.caption_features.push_back(encoded.features);
      corpus.caption_slots.push_back(std::move(encoded.slots));
    } else {
      corpus.caption_features.push_back(corpus.caption_features[it->second]);
      corpus.caption_slots.push_back(corpus.caption_slots[it->second]);
    }
  }
  report(callbacks, "T5: encoded " + std::to_string(first_of.size()) + " distinct captions of " + std::to_string(corpus.captions.size()) +
                        " images (kept in memory for training)");
}

FrozenTarget load_frozen_target(const FrozenTargetRun& run, const ToolCallbacks& callbacks) {
  at::set_num_threads(run.threads);
  FrozenTarget frozen;
  frozen.manifest = read_manifest(run.bundle);
  const BundleManifest& m = frozen.manifest;
  frozen.corpus = load_corpora(run.corpora);
  check_corpus(frozen.corpus, m.target);
  encode_corpus_captions(frozen.corpus, m, callbacks);
  for (std::size_t i = 0; i < std::min(frozen.corpus.vocabulary.size(), m.text_vocab.size()); ++i)
    if (frozen.corpus.vocabulary[i] != m.text_vocab[i])
      throw Error("the corpus numbers its words differently from the bundle (word " + std::to_string(i) + ": '" +
                  frozen.corpus.vocabulary[i] + "' vs '" + m.text_vocab[i] + "')");
  if (frozen.corpus.vocabulary.size() > m.text_vocab.size()) throw Error("the corpus has words the bundle's vocabulary lacks");
  if (!run.held_out.empty()) {
    frozen.held_out = TokenizedCorpus::load(run.held_out);
    check_corpus(frozen.held_out, m.target);
    encode_corpus_captions(frozen.held_out, m, callbacks);
  }
  const at::Device device = resolve_device(run.device);
  frozen.target = std::make_unique<Transformer>(
      m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), device), device);
  return frozen;
}

}  // namespace speculum::tools
