#include "train/training_run.h"

#include <torch/optim/optimizer.h>
#include <torch/serialize.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "error.h"
#include "io/atomic_file.h"
#include "io/input_file.h"
#include "io/limits.h"
#include "io/json_fields.h"

namespace speculum {

namespace {

// Keeps the header and the rows of steps up to `last_step` of the log `text` read from `path` (written atomically).
void rewind_log(const std::string& path, const std::string& text, int last_step) {
  std::istringstream in(text);
  std::string kept, line;
  bool dropped = false;
  for (bool header = true; std::getline(in, line); header = false) {
    if (header || line.empty() || std::atoi(line.c_str()) <= last_step)
      kept += line + "\n";
    else
      dropped = true;
  }
  if (dropped) write_text_atomically(path, kept);
}

}  // namespace

TrainingLog::TrainingLog(const std::string& dir, std::vector<std::string> columns, int total_steps,
                         const CheckpointState& resumed)
    : columns_(std::move(columns)),
      total_steps_(total_steps),
      first_step_(resumed.step),
      earlier_seconds_(resumed.values.count(kTrainingSecondsKey) ? resumed.values.at(kTrainingSecondsKey) : 0),
      start_(std::chrono::steady_clock::now()) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/log.csv";
  std::error_code ec;  // a FIFO or a device in the run folder is refused, not read for ever
  const std::string text = std::filesystem::exists(std::filesystem::symlink_status(path, ec))
                               ? read_input_file(path, limits::kMaxTableBytes, "training log")
                               : std::string();
  const bool fresh = text.empty();
  if (!fresh) rewind_log(path, text, first_step_);
  csv_.open(path, std::ios::app);
  if (!csv_) throw Error("cannot write '" + path + "'");
  if (fresh) {
    csv_ << "step,seconds";
    for (const auto& c : columns_) csv_ << "," << c;
    csv_ << "\n";
  }
}

double TrainingLog::session_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double TrainingLog::training_seconds() const {
  return earlier_seconds_ + session_seconds();
}

void TrainingLog::row(int step, const std::vector<double>& values) {
  csv_ << step << "," << training_seconds();
  for (double v : values) csv_ << "," << v;
  csv_ << "\n";
  csv_.flush();
}

std::string TrainingLog::progress(int step, const std::vector<double>& values) const {
  const double seconds = session_seconds();
  const int done = step + 1 - first_step_;
  const double per_step = done > 0 ? seconds / done : 0;
  const double eta = per_step * (total_steps_ - step - 1);
  std::ostringstream s;
  s << "step " << step + 1 << "/" << total_steps_ << std::fixed << std::setprecision(4);
  for (std::size_t i = 0; i < values.size() && i < columns_.size(); ++i) s << "  " << columns_[i] << " " << values[i];
  s << std::setprecision(2) << "  " << per_step << " s/step  ETA " << int(eta / 60) << " min " << int(eta) % 60 << " s";
  return s.str();
}

TensorMap start_or_resume(const std::string& run_dir, const std::vector<TensorSpec>& specs, const char* what,
                          const std::function<TensorMap()>& fresh, const ProgressLine& progress,
                          CheckpointState& state) {
  std::filesystem::create_directories(checkpoint_dir(run_dir));
  if (!read_checkpoint_state(run_dir, state)) return fresh();
  progress(std::string("resuming ") + what + " training at step " + std::to_string(state.step));
  return load_tensors(SafetensorsFile::open(checkpoint_dir(run_dir) + "/weights.safetensors"), specs, at::kCPU);
}

TensorMap weights_of_run(const std::string& source_run, const std::vector<TensorSpec>& specs, const char* what) {
  const std::string file = checkpoint_dir(source_run) + "/weights.safetensors";
  if (!std::filesystem::exists(file))
    throw Error(std::string("--init-from '") + source_run + "' is not a " + what + " run: no " + file);
  const SafetensorsFile source = SafetensorsFile::open(file);
  for (const auto& spec : specs) {
    const TensorInfo* info = source.find(spec.name);
    if (!info) throw Error("--init-from '" + file + "' lacks tensor '" + spec.name + "' (another " + what + " layout)");
    if (info->shape != spec.shape)
      throw Error("--init-from '" + file + "': tensor '" + spec.name + "' has shape " + shape_to_string(info->shape) +
                  ", this target's " + what + " needs " + shape_to_string(spec.shape));
  }
  return load_tensors(source, specs, at::kCPU);
}

bool load_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& run_dir, at::Device device) {
  const std::string path = checkpoint_dir(run_dir) + "/optimizer.pt";
  if (!std::filesystem::exists(path)) return false;
  torch::load(optimizer, path, device);
  return true;
}

void save_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& run_dir) {
  const std::string path = checkpoint_dir(run_dir) + "/optimizer.pt";
  torch::save(optimizer, path + ".partial");
  std::filesystem::rename(path + ".partial", path);
}

void save_checkpoint(const std::string& run_dir, const TensorMap& weights, torch::optim::Optimizer& optimizer,
                     const TrainingLog& log, int step, const std::map<std::string, double>& values, CheckpointState& state) {
  save_tensors(checkpoint_dir(run_dir) + "/weights.safetensors", weights);
  save_optimizer_state(optimizer, run_dir);
  state.step = step;
  for (const auto& [key, value] : values) state.values[key] = value;
  state.values[TrainingLog::kTrainingSecondsKey] = log.training_seconds();
  write_checkpoint_state(run_dir, state);
}

TensorMap detached_copy(const TensorMap& weights) {
  TensorMap out;
  for (const auto& [name, t] : weights) out[name] = t.detach().clone();
  return out;
}

double clip_gradients(const std::vector<at::Tensor>& parameters, double max_norm) {
  at::NoGradGuard no_grad;
  double squared = 0;
  for (const auto& p : parameters)
    if (p.grad().defined()) squared += p.grad().pow(2).sum().item<double>();
  const double norm = std::sqrt(squared);
  if (norm > max_norm)
    for (const auto& p : parameters)
      if (p.grad().defined()) p.grad().mul_(max_norm / (norm + 1e-6));
  return norm;
}

std::string checkpoint_dir(const std::string& run_dir) {
  return run_dir + "/checkpoint";
}

bool read_checkpoint_state(const std::string& run_dir, CheckpointState& state) {
  const std::string path = checkpoint_dir(run_dir) + "/state.json";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return false;
  const nlohmann::json j = parse_untrusted_json(read_input_file(path, limits::kMaxSmallTextBytes, "checkpoint state"), path, 4);
  const JsonFields f(j, path);
  state.step = f.integer("step");
  if (j.contains("values"))
    for (const auto& [k, v] : j["values"].items()) state.values[k] = v.get<double>();
  return true;
}

void write_checkpoint_state(const std::string& run_dir, const CheckpointState& state) {
  write_text_atomically(checkpoint_dir(run_dir) + "/state.json",
                        nlohmann::json{{"step", state.step}, {"values", state.values}}.dump(2) + "\n");
}

}  // namespace speculum
