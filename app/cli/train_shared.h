// What the train subcommands share: a stop flag for Ctrl-C / SIGTERM (trainers checkpoint, then return)
// and the reader of a VQ run folder's tokenizer.json.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "io/bundle.h"
#include "models/transformer.h"
#include "train/target_trainer.h"
#include "train/training_run.h"

namespace speculum::cli {

extern std::atomic<bool> training_stop;
void stop_training_on_signals();  // SIGINT and SIGTERM set training_stop

VqConfig read_vq_run(const std::string& vq_dir);

// The options every trainer of a part beside a frozen target takes, bound to its parameters.
struct TrainerFlags {
  std::string bundle, held_out, out, device = "cpu";
  std::vector<std::string> corpora;
  int threads = 2;
  // --bundle, --corpus, --held-out, --out, --steps, --stop-at, --lr, --warmup, --batch, --seed, --threads,
  // --device, --checkpoint-every
  void add_to(CLI::App& command, TrainSchedule& schedule, int& stop_at, int& batch, std::uint64_t& seed, int& checkpoint_every);
};

// --device cpu|cuda for the trainers.
void add_training_device_option(CLI::App& command, std::string& device);

// What such a trainer starts from: the bundle's manifest, its target frozen on the device, the training
// corpora (their words numbered as the bundle numbers them, else an error naming the first difference)
// and the held-out corpus (empty when none). Sets the LibTorch threads and the stop signals.
struct FrozenTargetRun {
  BundleManifest manifest;
  std::unique_ptr<Transformer> target;
  TokenizedCorpus corpus, held_out;
};
FrozenTargetRun start_frozen_target_run(const TrainerFlags& flags, const char* what);

// The class a class bundle's self-sample with generation seed `seed` is drawn under: uniform over `classes`, from the
// seed alone (so train samples and calibrate resume and repeat exactly).
int class_of_sample(std::uint64_t seed, const std::vector<int>& classes);

}  // namespace speculum::cli
