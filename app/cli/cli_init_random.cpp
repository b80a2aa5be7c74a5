// speculum-cli init-random: a random-weight bundle of a preset size (tests, demos, benchmarks).
#include <iostream>

#include "cli/cli_options.h"

namespace speculum::cli {

void add_init_random_command(CLI::App& app) {
  auto p = std::make_shared<RandomBundleParams>();
  CLI::App* c = app.add_subcommand("init-random", "Write a random-weight bundle");
  c->add_option("--out", p->out_dir, "Output folder")->required();
  c->add_option("--preset", p->preset, "Size preset")->check(CLI::IsMember({"tiny", "small", "base", "llamagen-b", "llamagen-l", "llamagen-xl"}))->capture_default_str();
  c->add_option("--condition", p->condition, "Conditioning")->check(CLI::IsMember({"text", "class"}))->capture_default_str();
  c->add_option("--dim", p->dim, "Override the model width")->check(CLI::Range(8, 8192));
  c->add_option("--layers", p->n_layer, "Override the layer count")->check(CLI::Range(1, 256));
  c->add_option("--heads", p->n_head, "Override the head count")->check(CLI::Range(1, 256));
  c->add_option("--grid", p->grid, "Override the token grid side")->check(CLI::Range(1, 128));
  c->add_option("--vocab", p->vocab, "Override the image vocabulary (codebook) size")->check(CLI::Range(2, 1 << 20));
  c->add_option("--seed", p->seed, "Weight seed")->check(whole_number_check())->capture_default_str();
  c->add_flag("--fp16", p->fp16, "Store weights as F16");
  c->add_flag("--drafters,!--no-drafters", p->drafters,
              "Also random eagle and lisa drafters, soft-verification bounds and SSD heads (every method runs)")->capture_default_str();
  c->final_callback([p] {
    const int rc = run_reporting_errors([&] {
      create_random_bundle(*p);
      std::cout << "wrote random bundle (" << p->to_string() << ")\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
