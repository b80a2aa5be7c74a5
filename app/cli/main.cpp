// speculum-cli: one subcommand per task (generate, bench, eval, compare, train, data, check, ...).
#include <spdlog/spdlog.h>

#include <iostream>

#include "cli/cli_options.h"
#include "common/process_setup.h"

int main(int argc, char** argv) {
  speculum::app::ensure_passive_openmp(argv);
  CLI::App app{"Speculum: speculative decoding of autoregressive image models"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log engine details");
  app.parse_complete_callback([&] { spdlog::set_level(verbose ? spdlog::level::info : spdlog::level::warn); });

  speculum::cli::add_generate_command(app);
  speculum::cli::add_inspect_command(app);
  speculum::cli::add_init_random_command(app);
  speculum::cli::add_convert_command(app);
  speculum::cli::add_bench_command(app);
  speculum::cli::add_merge_command(app);
  speculum::cli::add_sweep_command(app);
  [[maybe_unused]] CLI::App* train = speculum::cli::add_train_commands(app);  // used by the image commands
  speculum::cli::add_compare_command(app);
  speculum::cli::add_calibrate_command(app);
  speculum::cli::add_recommend_command(app);
  speculum::cli::add_tune_command(app);
#ifndef SPECULUM_ENGINE_ONLY  // the commands that render, check or plot images (OpenCV, Qt)
  speculum::cli::add_image_training_commands(*train);
  speculum::cli::add_data_commands(app);
  speculum::cli::add_eval_command(app);
  speculum::cli::add_examples_command(app);
  speculum::cli::add_entropy_command(app);
  speculum::cli::add_plot_command(app);
#endif
  app.add_subcommand("methods", "List the decoding methods and their parameters")->final_callback([] {
    for (const auto& m : speculum::available_methods()) {
      std::cout << m.name << "  " << m.summary << "\n";
      for (const auto& p : m.params) {
        // The identifier first (what --opt takes), then what a person reads: label, default, the values allowed.
        std::cout << "    " << p.name << " = " << (p.draft_size ? "auto (untuned: " : "")
                  << speculum::param_value_text(p, p.default_value) << (p.draft_size ? ")" : "") << "  " << p.label << "; ";
        if (const std::string choices = speculum::param_choices_text(p); !choices.empty())
          std::cout << choices;
        else
          std::cout << (p.integer ? "whole numbers " : "") << p.min << " to " << p.max << (p.unit.empty() ? "" : " " + p.unit);
        std::cout << ". " << p.help << "\n";
      }
    }
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, or the usage problem
    // A command's own failure keeps its code (1); a usage error is 2, as the README says.
    if (dynamic_cast<const CLI::RuntimeError*>(&e)) return rc;
    return rc == 0 ? 0 : 2;
  }
  return 0;
}
