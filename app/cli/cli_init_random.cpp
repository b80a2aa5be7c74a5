// speculum-cli init-random: a random-weight bundle of a preset size (tests, demos, benchmarks).
#include <iostream>

#include "cli/cli_options.h"

namespace speculum::cli {

void add_init_random_command(CLI::App& app) {
  auto p = std::make_shared<RandomBundleParams>();
  CLI::App* c = app.add_subcommand("init-random", "Write a random-weight bundle");
  c->add_option("--out", p->out_dir, "Output folder")->required();
  c->add_option("--preset", p->preset, "Size preset")->check(CLI::IsMember({"tiny", "small", "base", "llamagen-b", "llamagen-l", "llamagen-xl"}))->capture_default_str();
  c->add_option("--condition", p->condition, "Conditioning (t5: LlamaGen T2I, captions read by --t5)")
      ->check(CLI::IsMember({"text", "class", "t5"}))
      ->capture_default_str();
  c->add_option("--t5", p->t5_dir, "--condition t5: the T5 folder the bundle refers to")->check(CLI::ExistingDirectory);
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

  auto t5 = std::make_shared<RandomT5Params>();
  CLI::App* t = app.add_subcommand("init-random-t5", "Write a T5 encoder folder (Hugging Face layout) with random weights");
  t->add_option("--out", t5->out_dir, "Output folder")->required();
  t->add_option("--preset", t5->preset, "Size preset")->check(CLI::IsMember({"tiny", "flan-t5-xl"}))->capture_default_str();
  t->add_option("--spiece", t5->spiece, "A SentencePiece model to copy in as spiece.model")->required()->check(CLI::ExistingFile);
  t->add_flag("--bf16", t5->bf16, "Store the weights as BF16");
  t->add_option("--seed", t5->seed, "Weight seed")->check(whole_number_check())->capture_default_str();
  t->final_callback([t5] {
    const int rc = run_reporting_errors([&] {
      create_random_t5_folder(*t5);
      std::cout << "wrote random T5 folder " << t5->out_dir << " (" << t5->preset << (t5->bf16 ? ", bf16" : "") << ")\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
