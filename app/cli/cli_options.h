// Flags shared by the subcommands that run the engine, bound to the engine's own params structs.
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <string>
#include <vector>

#include "speculum.h"

namespace speculum::cli {

struct EngineFlags {
  EngineParams params;
  void add_to(CLI::App& command);
  // Fills a default bundle path and a thread count when the user gave none.
  EngineParams resolved() const;
};

// --cfg, --temperature, --top-k, --top-p bound to `sampling` (in that order); `default_note` ends each help.
std::array<CLI::Option*, 4> add_sampling_options(CLI::App& command, SamplingParams& sampling, const std::string& default_note);

struct RequestFlags {
  GenerateParams params;
  std::vector<std::string> method_options;  // "name=value"
  void add_to(CLI::App& command, bool with_method);
  // The sampling flags the user left out take the model's recommended values; parses method options;
  // throws speculum::Error.
  GenerateParams resolved(const ModelInfo& model) const;

 private:
  std::array<CLI::Option*, 4> sampling_options_{};
};

// "NAME=VALUE" strings (--opt) as method options; "auto" is kAutoDraftSize. Throws speculum::Error naming the bad one.
MethodOptions parse_method_options(const std::vector<std::string>& name_values);

// Accepts exactly the digits of a value from 0 to 2^64 - 1 (for --seed and the like).
CLI::Validator whole_number_check();

// Runs a subcommand body, turning speculum::Error into "error: ..." and exit code 1.
int run_reporting_errors(const std::function<void()>& body);

void add_generate_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_init_random_command(CLI::App& app);
void add_convert_command(CLI::App& app);  // convert llamagen
void add_bench_command(CLI::App& app);
void add_merge_command(CLI::App& app);  // combines bench shards
void add_sweep_command(CLI::App& app);  // bench over a parameter grid
void add_data_commands(CLI::App& app);  // data shapes, check
// train target | drafter | samples | fit | bundle; returns `train` for the image-based ones below.
CLI::App* add_train_commands(CLI::App& app);
void add_image_training_commands(CLI::App& train);  // train vq | tokenize (OpenCV)
void add_emoji_command(CLI::App& data_command);  // data emoji
void add_eval_command(CLI::App& app);
void add_examples_command(CLI::App& app);  // prompts the bundle draws well, for the studio's hint
void add_compare_command(CLI::App& app);  // pairs two eval --csv runs
void add_entropy_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);  // LISA's soft-verification bounds
void add_recommend_command(CLI::App& app);  // the method options a bundle recommends
void add_plot_command(CLI::App& app);
void add_tune_command(CLI::App& app);  // auto draft sizes

}  // namespace speculum::cli
