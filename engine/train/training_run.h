// What every trainer shares: a learning-rate schedule, progress lines with ETA, a CSV loss log, gradient
// clipping, and checkpoints (weights as safetensors, optimizer state, step) that a later run resumes from.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "models/tensor_io.h"
#include "train/train_params.h"

namespace torch::optim {
class Optimizer;
}

namespace speculum {

// Checkpoint bookkeeping in `<dir>/checkpoint/`: state.json carries the step and free-form numbers.
struct CheckpointState {
  int step = 0;
  std::map<std::string, double> values;
};

// Appends rows to `<dir>/log.csv` (header written once) and prints a progress line with ETA. A run
// resumed from `resumed` first drops the rows logged after that checkpoint (they are trained again),
// and its `seconds` column continues the training time saved there, so the log reads as one run.
class TrainingLog {
 public:
  TrainingLog(const std::string& dir, std::vector<std::string> columns, int total_steps,
              const CheckpointState& resumed);
  void row(int step, const std::vector<double>& values);
  std::string progress(int step, const std::vector<double>& values) const;
  double training_seconds() const;  // over all runs so far; store it as kTrainingSecondsKey

  static constexpr const char* kTrainingSecondsKey = "training_seconds";

 private:
  double session_seconds() const;

  std::ofstream csv_;
  std::vector<std::string> columns_;
  int total_steps_;
  int first_step_;
  double earlier_seconds_;
  std::chrono::steady_clock::time_point start_;
};
std::string checkpoint_dir(const std::string& run_dir);
bool read_checkpoint_state(const std::string& run_dir, CheckpointState& state);
void write_checkpoint_state(const std::string& run_dir, const CheckpointState& state);  // atomic

using ProgressLine = std::function<void(const std::string&)>;

// A run's starting weights: creates `<run_dir>/checkpoint`; when it holds a state (read into `state`),
// the checkpoint's weights for `specs` and a "resuming <what> training at step N" progress line, else
// `fresh()`. `state.step` is 0 for a fresh run.
TensorMap start_or_resume(const std::string& run_dir, const std::vector<TensorSpec>& specs, const char* what,
                          const std::function<TensorMap()>& fresh, const ProgressLine& progress,
                          CheckpointState& state);

// A warm start: the weights for `specs` in the checkpoint of another run of the same part (`source_run`, e.g. the
// drafter of the target this one continues). Throws, naming the run and the tensor, when a tensor is missing or has
// another shape (a drafter of another target, SSD heads of another count).
TensorMap weights_of_run(const std::string& source_run, const std::vector<TensorSpec>& specs, const char* what);

// The optimizer's state in `<run_dir>/checkpoint/optimizer.pt`: load (when present; true if it was) and
// save (atomically). Loading maps the state onto `device`, whichever device saved it.
bool load_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& run_dir, at::Device device);
void save_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& run_dir);

// A checkpoint in `<run_dir>/checkpoint`: the weights, the optimizer state, then the state file (step, `values`
// merged into `state.values`, the training time so far), written last so that it names a complete checkpoint.
void save_checkpoint(const std::string& run_dir, const TensorMap& weights, torch::optim::Optimizer& optimizer,
                     const TrainingLog& log, int step, const std::map<std::string, double>& values, CheckpointState& state);

// The weights detached from autograd, as a trainer returns them.
TensorMap detached_copy(const TensorMap& weights);

// Scales all gradients so their global L2 norm is at most `max_norm`; returns the norm before.
double clip_gradients(const std::vector<at::Tensor>& parameters, double max_norm);

}  // namespace speculum
