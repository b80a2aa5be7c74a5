// speculum-cli tune: each method's fastest draft size on this machine, for `auto` (draft_sizes.h), beside `ar`.
#include <iomanip>
#include <iostream>
#include <memory>

#include "cli/cli_options.h"
#include "common/process_setup.h"

namespace speculum::cli {
namespace {

bool beyond_auto(const MethodTuning& m, const DraftSizeTrial& trial) {
  const ParamSpec* param = draft_size_param(m.method);
  return param && !auto_may_choose(*param, trial.size);
}

void print_table(const DraftSizeTable& t) {
  std::cout << "Bundle `" << t.bundle_name << "`, " << t.key.to_string() << "; " << t.images
            << " image(s) per size, interleaved with `ar` (" << std::fixed << std::setprecision(1) << t.ar_ms_per_image
            << " ms/image).\n\n| method | draft size | ms / image (median) | tokens / pass | speed-up vs `ar` |\n|---|---|---|---|---|\n";
  for (const MethodTuning& m : t.methods)
    for (const DraftSizeTrial& trial : m.trials)
      std::cout << "| `" << m.method << "` | " << m.param << " " << trial.size
                << (trial.size == m.chosen ? " **(auto)**" : beyond_auto(m, trial) ? " (changes what it draws: pin it)" : "")
                << " | " << std::setprecision(1) << trial.ms_per_image << " | " << std::setprecision(2) << trial.tokens_per_pass
                << " | " << (trial.ms_per_image > 0 ? t.ar_ms_per_image / trial.ms_per_image : 0) << "× |\n";
  std::cout << "\nCost curve (one target forward of n new tokens after " << "half the grid, median ms):\n\n| n |";
  for (const ForwardCost& c : t.cost_curve) std::cout << " " << c.new_tokens << " |";
  std::cout << "\n|---|";
  for (std::size_t i = 0; i < t.cost_curve.size(); ++i) std::cout << "---|";
  std::cout << "\n| ms |";
  for (const ForwardCost& c : t.cost_curve) std::cout << " " << std::setprecision(2) << c.ms << " |";
  std::cout << "\n| × n = 1 |";
  for (const ForwardCost& c : t.cost_curve) std::cout << " " << c.ms / t.cost_curve.front().ms << " |";
  std::cout << "\n\n";
  for (const MethodTuning& m : t.methods) {
    if (t.speedup(m) >= 1) continue;
    if (t.speedup(m.fastest()) < 1)
      std::cout << "`" << m.method << "` is slower than `ar` at every " << m.param << " tried here (best " << std::setprecision(2)
                << t.speedup(m) << "× at " << m.chosen << ").\n";
    else
      std::cout << "`" << m.method << "` is slower than `ar` at the " << m.param << " auto may take (" << std::setprecision(2)
                << t.speedup(m) << "× at " << m.chosen << "); " << m.param << " " << m.fastest().size << " is "
                << t.speedup(m.fastest()) << "× but changes what this lossy method draws.\n";
  }
}

}  // namespace

void add_tune_command(CLI::App& app) {
  struct State {
    EngineFlags engine;
    TuneParams tune;
    std::string out;
  };
  auto state = std::make_shared<State>();
  CLI::App* c = app.add_subcommand("tune", "Measure each method's fastest draft size here, for `auto` (a benchmark: run it on a quiet machine)");
  state->engine.add_to(*c);
  c->add_option("--methods", state->tune.methods, "Methods to tune (default: every method the bundle runs that has a draft size)")->delimiter(',');
  c->add_option("--images", state->tune.images, "Timed images per size (the bundle's example prompts or classes in turn)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  c->add_option("--seed", state->tune.seed, "Seed of the first image")->check(whole_number_check());
  c->add_option("--out", state->out, "Draft-size file to add the table to (default: the --draft-sizes file)");
  c->final_callback([state] {
    const int rc = run_reporting_errors([&] {
      const std::atomic<bool>* interrupted = app::interrupt_flag();
      const EngineParams params = state->engine.resolved();
      const std::string out = state->out.empty() ? params.draft_sizes_file : state->out;
      if (out.empty()) throw Error("--out: no draft-size file (--draft-sizes is none): name one");
      const auto engine = Engine::load(params);
      Callbacks callbacks;
      callbacks.progress = [](int done, int total) { std::cerr << "\rtune: " << done << " / " << total << " images" << std::flush; };
      const DraftSizeTable table = tune_draft_sizes(*engine, state->tune, callbacks, interrupted);
      std::cerr << "\n";
      print_table(table);
      if (const std::string note = save_draft_sizes(out, table); !note.empty()) std::cerr << "warning: " << note << "\n";
      std::cout << "wrote " << out << " (auto draft sizes for this bundle, " << table.key.to_string() << ")\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
