// speculum-cli entropy: how sure the target is where images are flat versus textured. Teacher-forces
// the target on held-out shapes images (their true tokens and captions) and averages the entropy of
// its next-token distribution over cells whose 4x4-pixel patch is flat or textured. The methods exist
// for this regime: sharp distributions on flat areas, flat ones on texture.
#include <iomanip>
#include <iostream>

#include "cli/cli_options.h"
#include "common/default_bundle.h"
#include "speculum_tools.h"

namespace speculum::cli {

void add_entropy_command(CLI::App& app) {
  auto a = std::make_shared<EntropyRequest>();
  CLI::App* c = app.add_subcommand("entropy", "Mean next-token entropy of the target on flat vs. textured image regions");
  c->add_option("--bundle", a->bundle, "Model bundle (default: the embedded one)");
  c->add_option("--held-out", a->held_out, "Held-out corpus from `train tokenize` (shapes rows first)")->required();
  c->add_option("--count", a->count, "Shapes images to use (the corpus's first rows)")->check(CLI::Range(1, 100000))->capture_default_str();
  c->add_option("--scene-seed", a->scene_seed, "Scene seed of the corpus's first row (train tokenize --seed)")->check(whole_number_check())->capture_default_str();
  c->add_option("--flat-below", a->flat_below, "A cell is flat when its patch's pixel std (0-255) is below this")->capture_default_str();
  c->add_option("--textured-above", a->textured_above, "... and textured when above this")->capture_default_str();
  c->add_option("--threads", a->threads, "LibTorch threads")->capture_default_str();
  c->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      if (a->bundle.empty()) a->bundle = app::default_bundle_dir();
      const EntropyReport r = measure_entropy(*a);
      std::cout << std::fixed << std::setprecision(3) << "entropy of the next-token distribution (nats; uniform over the codebook = "
                << r.uniform << "), " << a->count << " held-out shapes images:\n"
                << "  flat cells (patch std < " << a->flat_below << ")      " << r.flat.value << "  (" << r.flat.cells << " cells)\n"
                << "  textured cells (patch std > " << a->textured_above << ") " << r.textured.value << "  (" << r.textured.cells << " cells)\n"
                << "  in between                        " << r.middle.value << "  (" << r.middle.cells << " cells)\n"
                << "  all cells                         " << r.all.value << "  (" << r.all.cells << " cells)\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
