// speculum-cli calibrate: measures LISA's soft-verification bounds on a bundle's target (its own images
// at its recommended sampling) and writes them into the manifest ("soft_verification").
#include <iomanip>
#include <iostream>

#include "cli/cli_options.h"
#include "common/default_bundle.h"
#include "speculum_tools.h"

namespace speculum::cli {

void add_calibrate_command(CLI::App& app) {
  auto a = std::make_shared<CalibrateRequest>();
  CLI::App* c =
      app.add_subcommand("calibrate", "Measure LISA's soft-verification bounds and write them into the bundle");
  c->add_option("--bundle", a->bundle, "Model bundle (default: the embedded one)");
  c->add_option("--images", a->images, "Images the target generates (ar, the bundle's sampling) for the measurement")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  c->add_option("--positions", a->params.positions_per_image, "Positions sampled per image")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  c->add_option("--delta", a->params.delta, "Quantile level 1 - delta of the bounds")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  c->add_option("--confidence-max", a->params.confidence_max,
                "Never relax where the target's top probability exceeds this")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  c->add_option("--scene-seed", a->scene_seed, "Captions come from shapes scenes (class bundles: the classes drawn) from this seed on")->check(whole_number_check())
      ->capture_default_str();
  c->add_option("--prompts", a->prompts_file,
                "Text bundles: captions from this file, one per line, in turn (required for T5 bundles)");
  c->add_option("--threads", a->threads, "LibTorch threads")->capture_default_str();
  c->add_flag("--dry-run", a->dry_run, "Print the bounds without writing them");
  c->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      if (a->bundle.empty()) a->bundle = app::default_bundle_dir();
      const SoftVerificationBounds b = calibrate_bundle(*a);
      std::cout << std::setprecision(4) << "soft verification bounds from " << b.samples << " positions of " << a->images
                << " images (quantile " << 1 - a->params.delta << "):\n  alpha " << b.alpha << "  beta " << b.beta << "  u_bound "
                << b.u_bound << "  delta_max " << b.delta_max << "  confidence_max " << b.confidence_max << "\n";
      if (!a->dry_run) std::cout << "wrote them into " << a->bundle << "/" << kManifestName << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
