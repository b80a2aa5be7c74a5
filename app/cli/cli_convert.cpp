// speculum-cli convert llamagen: LlamaGen's c2i and t2i PyTorch checkpoints into a bundle, no Python.
#include <iostream>

#include "cli/cli_options.h"
#include "speculum.h"

namespace speculum::cli {

void add_convert_command(CLI::App& app) {
  CLI::App* convert = app.add_subcommand("convert", "Convert checkpoints of other projects into bundles");
  convert->require_subcommand(1);
  auto p = std::make_shared<ConvertParams>();
  auto sets = std::make_shared<std::vector<std::string>>();
  std::string keys_help = "Override an inferred value, key=value; keys:";
  for (const auto& [key, what] : llamagen_override_keys()) keys_help += "\n  " + key + ": " + what;
  CLI::App* c = convert->add_subcommand("llamagen", "LlamaGen c2i or t2i GPT + VQ checkpoints (torch.save .pt) into a bundle");
  c->add_option("--gpt", p->gpt_path, "The GPT checkpoint, e.g. c2i_B_256.pt")->required();
  c->add_option("--vq", p->vq_path, "The VQ checkpoint, e.g. vq_ds16_c2i.pt")->required();
  c->add_option("--t5", p->t5_dir, "t2i GPTs: the Flan-T5 folder (config.json, spiece.model, weights); the bundle refers to it")
      ->check(CLI::ExistingDirectory);
  c->add_option("--out", p->out_dir, "The bundle folder to create (must not exist)")->required();
  c->add_option("--name", p->name, "Bundle name (default: llamagen-<GPT file stem>)");
  c->add_option("--from", p->state_key, "Checkpoint entry with the weights, e.g. ema (default: model, module, state_dict, ema, top level)");
  c->add_option("--set", *sets, keys_help)->type_name("KEY=VALUE");
  c->final_callback([p, sets] {
    const int rc = run_reporting_errors([&] {
      for (const auto& s : *sets) {
        const auto eq = s.find('=');
        if (eq == std::string::npos || eq == 0) throw Error("--set '" + s + "': expected key=value");
        p->overrides.emplace_back(s.substr(0, eq), s.substr(eq + 1));
      }
      const ConvertReport report = convert_llamagen(*p);
      for (const auto& line : report.lines) std::cout << "  " << line << "\n";
      std::cout << "wrote bundle " << report.out_dir << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  auto lantern = std::make_shared<LanternDrafterParams>();
  CLI::App* l = convert->add_subcommand("lantern-drafter", "LANTERN's LlamaGen T2I drafter (config.json + pytorch_model.bin) into a T2I bundle as its eagle drafter");
  l->add_option("--drafter", lantern->drafter_dir, "The drafter folder, e.g. llamagen_drafter")->required()->check(CLI::ExistingDirectory);
  l->add_option("--bundle", lantern->bundle_dir, "A bundle converted from a LlamaGen t2i checkpoint")->required()->check(CLI::ExistingDirectory);
  l->final_callback([lantern] {
    const int rc = run_reporting_errors([&] {
      const ConvertReport report = import_lantern_drafter(*lantern);
      for (const auto& line : report.lines) std::cout << "  " << line << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
