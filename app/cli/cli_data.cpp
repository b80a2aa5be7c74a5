// speculum-cli data shapes: write a seeded shapes dataset (PNG files + captions.jsonl).
// speculum-cli check: score an image against a shapes prompt, or the checker against ground truth
// (optionally passed through a bundle's tokenizer: the ceiling any target of that bundle can reach).
#include <iomanip>
#include <iostream>

#include "cli/cli_options.h"
#include "common/default_bundle.h"
#include "speculum_tools.h"

namespace speculum::cli {
namespace {

void print_report(const eval::CheckReport& report) {
  for (const auto& c : report.claims)
    std::cout << (c.passed ? "  PASS  " : "  FAIL  ") << std::left << std::setw(11) << eval::claim_kind_name(c.kind)
              << c.claim << (c.passed ? "" : "  (" + c.found + ")") << "\n";
  std::cout << (report.passed() ? "PASS" : "FAIL") << "\n";
}

// The checker's accuracy on ground truth, per family and claim kind, and its first misses.
void print_ground_truth(const GroundTruthCheckRequest& request, const GroundTruthCheckReport& report) {
  std::cout << "checker on " << request.count << (request.through_tokenizer.empty() ? "" : " tokenizer reconstructions of")
            << " ground-truth images (seeds " << request.first_seed << ".." << request.first_seed + request.count - 1 << ")\n";
  for (const auto* table : {&report.by_family, &report.by_claim})
    for (const auto& [name, pt] : *table)
      std::cout << "  " << std::left << std::setw(12) << name << std::right << std::setw(6) << pt.passed << " / "
                << std::setw(6) << pt.total << "  " << std::fixed << std::setprecision(4) << double(pt.passed) / pt.total << "\n";
  for (const auto& m : report.misses) std::cout << "  miss: " << m << "\n";
}

}  // namespace

void add_data_commands(CLI::App& app) {
  CLI::App* data_cmd = app.add_subcommand("data", "Generate training data");
  data_cmd->require_subcommand(1);
  add_emoji_command(*data_cmd);
  auto shapes = std::make_shared<ShapesDatasetRequest>();
  CLI::App* s = data_cmd->add_subcommand("shapes", "Seeded shapes scenes with captions (PNG + captions.jsonl)");
  s->add_option("--out", shapes->out, "Output folder")->required();
  s->add_option("--count", shapes->count, "Number of images")->check(CLI::Range(1, 10000000))->capture_default_str();
  s->add_option("--seed", shapes->seed, "First scene seed (scene i uses seed + i)")->check(whole_number_check())->capture_default_str();
  s->final_callback([shapes] {
    const int rc = run_reporting_errors([&] {
      write_shapes_dataset(*shapes, {[](const std::string& line) { std::cout << line << "\n"; }, nullptr});
    });
    if (rc) throw CLI::RuntimeError(rc);
  });

  struct CheckArgs {
    std::string prompt;
    std::string image;
    int ground_truth = 0;
    std::uint64_t seed = 1000000;
    std::string through_tokenizer;
  };
  auto check = std::make_shared<CheckArgs>();
  CLI::App* c = app.add_subcommand("check", "Score an image against a shapes prompt (exit 0 pass, 3 fail)");
  c->add_option("--prompt", check->prompt, "The shapes caption the image should show");
  c->add_option("image", check->image, "Image file (PNG)");
  c->add_option("--ground-truth", check->ground_truth, "Instead: score the checker on N rendered scenes")
      ->check(CLI::Range(1, 10000000));
  c->add_option("--seed", check->seed, "First scene seed for --ground-truth")->check(whole_number_check())->capture_default_str();
  c->add_option("--through-tokenizer", check->through_tokenizer,
                "With --ground-truth: score each scene after encoding and decoding it with this bundle's tokenizer");
  c->final_callback([check] {
    int result = 0;
    const int rc = run_reporting_errors([&] {
      if (check->ground_truth > 0) {
        const GroundTruthCheckRequest request{check->ground_truth, check->seed, check->through_tokenizer};
        return print_ground_truth(request, check_ground_truth(request));
      }
      if (!check->through_tokenizer.empty()) throw Error("--through-tokenizer goes with --ground-truth N");
      if (check->prompt.empty() || check->image.empty()) throw Error("check needs --prompt and an image (or --ground-truth N)");
      const eval::CheckReport report = check_image(read_image_file(check->image), eval::parse_shapes_prompt(check->prompt));
      print_report(report);
      if (!report.passed()) result = 3;
    });
    if (rc || result) throw CLI::RuntimeError(rc ? rc : result);
  });

  struct FloorArgs {
    int count = 256;
    std::string through_tokenizer;
  };
  auto floor = std::make_shared<FloorArgs>();
  CLI::App* f = data_cmd->add_subcommand(
      "fd-floor", "The Fréchet distance a perfect model would read at N images: two disjoint sets of N held-out scenes");
  f->add_option("--count", floor->count, "Images per set")->check(CLI::Range(2, 100000))->capture_default_str();
  f->add_option("--through-tokenizer", floor->through_tokenizer, "Reconstruct every scene with this bundle's tokenizer first (as bench's reference)");
  f->final_callback([floor] {
    const int rc = run_reporting_errors([&] {
      const auto net = FeatureExtractor::load(app::feature_net_path());
      if (!net) throw Error("no feature network (scripts/train-features.sh makes it)");
      // bench's reference scenes (the eval prompts') against as many others from a disjoint range.
      const auto a = net->of_scenes(data::kHeldOutSceneSeeds, floor->count, floor->through_tokenizer);
      const auto b = net->of_scenes(710000000, floor->count, floor->through_tokenizer);
      std::cout << "Fréchet distance between two disjoint sets of " << floor->count << " held-out scenes"
                << (floor->through_tokenizer.empty() ? "" : " (tokenizer reconstructions)") << ": " << std::fixed
                << std::setprecision(3) << *frechet_distance(a, b) << "\n";
      if (!floor->through_tokenizer.empty())
        std::cout << "... and between the reconstructions and the raw renders of the same scenes: "
                  << *frechet_distance(a, net->of_scenes(data::kHeldOutSceneSeeds, floor->count, "")) << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
