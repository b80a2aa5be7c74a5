#include "tools/tool_support.h"

#include <ATen/Parallel.h>

#include <filesystem>

#include "error.h"
#include "io/json_fields.h"
#include "models/device.h"

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

FrozenTarget load_frozen_target(const FrozenTargetRun& run, const char* what) {
  at::set_num_threads(run.threads);
  FrozenTarget frozen;
  frozen.manifest = read_manifest(run.bundle);
  const BundleManifest& m = frozen.manifest;
  if (m.target.condition == ConditionKind::Text && m.target.caption_source != CaptionSource::Words)
    throw Error(std::string("train ") + what + ": T5-conditioned bundles are not supported yet; '" + m.dir +
                "' reads T5 features (class bundles and shapes-caption bundles train from their own samples)");
  frozen.corpus = load_corpora(run.corpora);
  for (std::size_t i = 0; i < std::min(frozen.corpus.vocabulary.size(), m.text_vocab.size()); ++i)
    if (frozen.corpus.vocabulary[i] != m.text_vocab[i])
      throw Error("the corpus numbers its words differently from the bundle (word " + std::to_string(i) + ": '" +
                  frozen.corpus.vocabulary[i] + "' vs '" + m.text_vocab[i] + "')");
  if (frozen.corpus.vocabulary.size() > m.text_vocab.size()) throw Error("the corpus has words the bundle's vocabulary lacks");
  if (!run.held_out.empty()) frozen.held_out = TokenizedCorpus::load(run.held_out);
  const at::Device device = resolve_device(run.device);
  frozen.target = std::make_unique<Transformer>(
      m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), device), device);
  return frozen;
}

}  // namespace speculum::tools
