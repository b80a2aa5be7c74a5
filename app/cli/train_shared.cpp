#include "cli/train_shared.h"

#include <csignal>
#include <iostream>

namespace speculum::cli {

std::atomic<bool> training_stop{false};

namespace {

void request_stop(int) { training_stop = true; }

void stop_training_on_signals() {
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
}

}  // namespace

ToolCallbacks progress_callbacks() {
  return {[](const std::string& line) { std::cout << line << std::endl; }, nullptr};
}

ToolCallbacks training_callbacks() {
  stop_training_on_signals();
  ToolCallbacks callbacks = progress_callbacks();
  callbacks.stop = &training_stop;
  return callbacks;
}

void add_training_device_option(CLI::App& command, std::string& device) {
  command.add_option("--device", device, "cpu, or cuda with a CUDA LibTorch (checkpoints stay device-free)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

void add_frozen_target_options(CLI::App& c, FrozenTargetRun& run, TrainSchedule& schedule, int& stop_at, int& batch,
                               std::uint64_t& seed, int& checkpoint_every) {
  c.add_option("--bundle", run.bundle, "Bundle whose frozen target it serves")->required();
  c.add_option("--corpus", run.corpora, "Tokenised corpora (train tokenize, train samples) the target is teacher-forced on")
      ->required();
  c.add_option("--held-out", run.held_out, "Held-out corpus: acceptance at checkpoints");
  c.add_option("--out", run.out, "Run folder; resumes if it has a checkpoint")->required();
  c.add_option("--steps", schedule.steps, "Optimisation steps")->capture_default_str();
  c.add_option("--stop-at", stop_at, "Stop with a checkpoint at this step (0 = run to --steps)")->capture_default_str();
  c.add_option("--lr", schedule.peak_lr, "Peak learning rate")->capture_default_str();
  c.add_option("--warmup", schedule.warmup, "Linear warm-up steps")->capture_default_str();
  c.add_option("--batch", batch, "Sequences per step")->capture_default_str();
  c.add_option("--seed", seed, "Seed")->capture_default_str();
  c.add_option("--threads", run.threads, "LibTorch threads")->capture_default_str();
  add_training_device_option(c, run.device);
  c.add_option("--checkpoint-every", checkpoint_every, "Steps between checkpoints")->capture_default_str();
}

}  // namespace speculum::cli
