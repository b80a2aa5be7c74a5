// What the train subcommands share: a stop flag for Ctrl-C / SIGTERM (trainers checkpoint, then return), the
// callbacks that print a tool's progress lines and pass that flag, and the options of a part trained beside a
// frozen target.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <string>

#include "speculum_tools.h"

namespace speculum::cli {

extern std::atomic<bool> training_stop;  // set by SIGINT and SIGTERM once training_callbacks() ran

// Progress lines to stdout (flushed), for a tool that runs to its end (Ctrl-C ends the process).
ToolCallbacks progress_callbacks();
// ... and stop on training_stop, for a tool that can stop cleanly; installs the signal handlers.
ToolCallbacks training_callbacks();

// --device cpu|cuda for the trainers.
void add_training_device_option(CLI::App& command, std::string& device);

// --bundle, --corpus, --held-out, --out, --steps, --stop-at, --lr, --warmup, --batch, --seed, --threads, --device,
// --checkpoint-every: the options every trainer of a part beside a frozen target takes, bound to its request.
void add_frozen_target_options(CLI::App& command, FrozenTargetRun& run, TrainSchedule& schedule, int& stop_at, int& batch,
                               std::uint64_t& seed, int& checkpoint_every);

}  // namespace speculum::cli
