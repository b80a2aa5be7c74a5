#include "cli/train_shared.h"

#include <ATen/Parallel.h>

#include <csignal>
#include <sstream>

#include "error.h"
#include "io/input_file.h"
#include "io/json_fields.h"
#include "io/limits.h"
#include "models/device.h"
#include "sampling/counter_rng.h"

namespace speculum::cli {

std::atomic<bool> training_stop{false};

namespace {
void request_stop(int) { training_stop = true; }
}  // namespace

void stop_training_on_signals() {
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
}

VqConfig read_vq_run(const std::string& vq_dir) {
  const std::string path = vq_dir + "/tokenizer.json";
  const std::string hint = " (train the tokenizer first: speculum-cli train vq --out " + vq_dir + ")";
  const nlohmann::json doc =
      parse_untrusted_json(read_input_file(path, limits::kMaxSmallTextBytes, "tokenizer file", hint.c_str()), path, 4);
  return read_tokenizer_section(JsonFields(doc, path));
}

void add_training_device_option(CLI::App& command, std::string& device) {
  command.add_option("--device", device, "cpu, or cuda with a CUDA LibTorch (checkpoints stay device-free)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

void TrainerFlags::add_to(CLI::App& c, TrainSchedule& schedule, int& stop_at, int& batch, std::uint64_t& seed,
                          int& checkpoint_every) {
  c.add_option("--bundle", bundle, "Bundle whose frozen target it serves")->required();
  c.add_option("--corpus", corpora, "Tokenised corpora (train tokenize, train samples) the target is teacher-forced on")
      ->required();
  c.add_option("--held-out", held_out, "Held-out corpus: acceptance at checkpoints");
  c.add_option("--out", out, "Run folder; resumes if it has a checkpoint")->required();
  c.add_option("--steps", schedule.steps, "Optimisation steps")->capture_default_str();
  c.add_option("--stop-at", stop_at, "Stop with a checkpoint at this step (0 = run to --steps)")->capture_default_str();
  c.add_option("--lr", schedule.peak_lr, "Peak learning rate")->capture_default_str();
  c.add_option("--warmup", schedule.warmup, "Linear warm-up steps")->capture_default_str();
  c.add_option("--batch", batch, "Sequences per step")->capture_default_str();
  c.add_option("--seed", seed, "Seed")->capture_default_str();
  c.add_option("--threads", threads, "LibTorch threads")->capture_default_str();
  add_training_device_option(c, device);
  c.add_option("--checkpoint-every", checkpoint_every, "Steps between checkpoints")->capture_default_str();
}

int class_of_sample(std::uint64_t seed, const std::vector<int>& classes) {
  const double u = counter_uniform(seed, RngStream::Data, 0, 0);
  return classes[std::min(classes.size() - 1, static_cast<std::size_t>(u * static_cast<double>(classes.size())))];
}

FrozenTargetRun start_frozen_target_run(const TrainerFlags& flags, const char* what) {
  at::set_num_threads(flags.threads);
  stop_training_on_signals();
  FrozenTargetRun run;
  run.manifest = read_manifest(flags.bundle);
  const BundleManifest& m = run.manifest;
  if (m.target.condition == ConditionKind::Text && m.target.caption_source != CaptionSource::Words)
    throw Error(std::string("train ") + what + ": T5-conditioned bundles are not supported yet; '" + m.dir +
                "' reads T5 features (class bundles and shapes-caption bundles train from their own samples)");
  run.corpus = load_corpora(flags.corpora);
  for (std::size_t i = 0; i < std::min(run.corpus.vocabulary.size(), m.text_vocab.size()); ++i)
    if (run.corpus.vocabulary[i] != m.text_vocab[i])
      throw Error("the corpus numbers its words differently from the bundle (word " + std::to_string(i) + ": '" +
                  run.corpus.vocabulary[i] + "' vs '" + m.text_vocab[i] + "')");
  if (run.corpus.vocabulary.size() > m.text_vocab.size()) throw Error("the corpus has words the bundle's vocabulary lacks");
  if (!flags.held_out.empty()) run.held_out = TokenizedCorpus::load(flags.held_out);
  const at::Device device = resolve_device(flags.device);
  run.target = std::make_unique<Transformer>(
      m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), device), device);
  return run;
}

}  // namespace speculum::cli
