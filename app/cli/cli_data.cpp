// speculum-cli data shapes: write a seeded shapes dataset (PNG files + captions.jsonl).
// speculum-cli check: score an image against a shapes prompt, or the checker against ground truth
// (optionally passed through a bundle's tokenizer: the ceiling any target of that bundle can reach).
#include <c10/core/InferenceMode.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/bench_features.h"
#include "cli/cli_options.h"
#include "common/default_bundle.h"
#include "io/atomic_file.h"
#include "data/image_batches.h"
#include "data/shapes_render.h"
#include "eval/prompt_checker.h"
#include "io/bundle.h"
#include "models/vq_model.h"
#include "trace/frechet_distance.h"

namespace speculum::cli {
namespace {

void print_report(const eval::CheckReport& report) {
  for (const auto& c : report.claims)
    std::cout << (c.passed ? "  PASS  " : "  FAIL  ") << std::left << std::setw(11) << eval::claim_kind_name(c.kind)
              << c.claim << (c.passed ? "" : "  (" + c.found + ")") << "\n";
  std::cout << (report.passed() ? "PASS" : "FAIL") << "\n";
}

// Scores the checker on `count` rendered ground-truth scenes, each reconstructed by `tokenizer` when one is
// given; prints accuracy per claim kind and family.
void check_ground_truth(int count, std::uint64_t first_seed, const VqModel* tokenizer) {
  std::map<std::string, std::pair<int, int>> by_kind, by_family;  // passed, total
  std::vector<std::string> misses;
  for (int i = 0; i < count; ++i) {
    const data::Scene scene = data::sample_scene(first_seed + i);
    const std::string caption = scene.caption();
    const cv::Mat rendered = data::render_scene(scene);
    const eval::CheckReport report =
        eval::check_image(tokenizer ? data::reconstruct(*tokenizer, rendered) : rendered, eval::parse_shapes_prompt(caption));
    for (const auto& c : report.claims) {
      auto& k = by_kind[eval::claim_kind_name(c.kind)];
      k.first += c.passed;
      ++k.second;
      if (!c.passed && misses.size() < 20)
        misses.push_back("seed " + std::to_string(first_seed + i) + " \"" + caption + "\": " + c.failure());
    }
    auto& f = by_family[data::family_name(scene.family)];
    f.first += report.passed();
    ++f.second;
    auto& all = by_family["all"];
    all.first += report.passed();
    ++all.second;
  }
  std::cout << "checker on " << count << (tokenizer ? " tokenizer reconstructions of" : "") << " ground-truth images (seeds " << first_seed << ".." << first_seed + count - 1 << ")\n";
  for (const auto* table : {&by_family, &by_kind})
    for (const auto& [name, pt] : *table)
      std::cout << "  " << std::left << std::setw(12) << name << std::right << std::setw(6) << pt.first << " / "
                << std::setw(6) << pt.second << "  " << std::fixed << std::setprecision(4) << double(pt.first) / pt.second << "\n";
  for (const auto& m : misses) std::cout << "  miss: " << m << "\n";
}

}  // namespace

void add_data_commands(CLI::App& app) {
  CLI::App* data_cmd = app.add_subcommand("data", "Generate training data");
  data_cmd->require_subcommand(1);
  add_emoji_command(*data_cmd);
  struct ShapesArgs {
    std::string out;
    int count = 1000;
    std::uint64_t seed = 0;
  };
  auto shapes = std::make_shared<ShapesArgs>();
  CLI::App* s = data_cmd->add_subcommand("shapes", "Seeded shapes scenes with captions (PNG + captions.jsonl)");
  s->add_option("--out", shapes->out, "Output folder")->required();
  s->add_option("--count", shapes->count, "Number of images")->check(CLI::Range(1, 10000000))->capture_default_str();
  s->add_option("--seed", shapes->seed, "First scene seed (scene i uses seed + i)")->check(whole_number_check())->capture_default_str();
  s->final_callback([shapes] {
    const int rc = run_reporting_errors([&] {
      std::filesystem::create_directories(shapes->out);
      const std::string index = shapes->out + "/captions.jsonl";
      std::ostringstream lines;
      for (int i = 0; i < shapes->count; ++i) {
        const std::uint64_t seed = shapes->seed + i;
        const data::Scene scene = data::sample_scene(seed);
        char name[32];
        std::snprintf(name, sizeof name, "%08d.png", i);
        eval::write_rgb_png(shapes->out + "/" + name, data::render_scene(scene));
        lines << nlohmann::json{{"file", name}, {"seed", seed}, {"caption", scene.caption()},
                                {"family", data::family_name(scene.family)}}.dump()
              << "\n";
      }
      write_text_atomically(index, lines.str());
      std::cout << "wrote " << shapes->count << " images and " << index << "\n";
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
        std::optional<VqModel> tokenizer;
        if (!check->through_tokenizer.empty()) {
          const BundleManifest m = read_manifest(check->through_tokenizer);
          tokenizer = VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU);
        }
        return check_ground_truth(check->ground_truth, check->seed, tokenizer ? &*tokenizer : nullptr);
      }
      if (!check->through_tokenizer.empty()) throw Error("--through-tokenizer goes with --ground-truth N");
      if (check->prompt.empty() || check->image.empty()) throw Error("check needs --prompt and an image (or --ground-truth N)");
      const eval::CheckReport report = eval::check_image(eval::read_rgb_image(check->image), eval::parse_shapes_prompt(check->prompt));
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
      const auto net = BenchFeatures::load(app::feature_net_path());
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
