// speculum-cli examples: prompts a text bundle draws well, chosen by the prompt checker rather than by
// hand. Each of the first N held-out captions is generated with several seeds; the prompts passed by the
// most seeds win, taken in turn from each caption family so the list shows every kind of prompt. --write
// stores them with the prompt grammar in the manifest's "prompt_guide", which the studio shows a new user.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>

#include "cli/cli_options.h"
#include "speculum_tools.h"

namespace speculum::cli {
namespace {

struct Candidate {
  std::string prompt;
  std::string family;
  int passed = 0;
};

std::string joined(const std::vector<std::string>& words, const char* separator) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

// The shapes captions' grammar, from the words the scene generator uses.
std::string shapes_grammar() {
  std::vector<std::string> colours, shapes, backgrounds;
  for (int c = 0; c < 8; ++c) colours.push_back(data::color_name(static_cast<data::ObjectColor>(c)));
  for (int s = 0; s < 4; ++s) shapes.push_back(data::shape_name(static_cast<data::Shape>(s)));
  for (int b = 0; b < 4; ++b) backgrounds.push_back(data::background_name(static_cast<data::BackgroundColor>(b)));
  return "a [small|large] COLOUR SHAPE, two|three|four COLOUR SHAPEs, or a COLOUR SHAPE left of|right of|above|below "
         "a COLOUR SHAPE; then on a [gradient|noisy|striped] BACKGROUND background. COLOUR: " + joined(colours, ", ") +
         ". SHAPE: " + joined(shapes, ", ") + ". BACKGROUND: " + joined(backgrounds, ", ") + ".";
}

// Best first, families in turn, only prompts passed by at least half the seeds.
std::vector<Candidate> choose(std::vector<Candidate> candidates, int seeds, int count) {
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) { return a.passed > b.passed; });
  std::map<std::string, std::vector<Candidate>> by_family;
  for (const Candidate& c : candidates)
    if (2 * c.passed >= seeds) by_family[c.family].push_back(c);
  std::vector<Candidate> chosen;
  for (std::size_t round = 0; static_cast<int>(chosen.size()) < count; ++round) {
    bool any = false;
    for (auto& [family, list] : by_family)
      if (round < list.size() && static_cast<int>(chosen.size()) < count) {
        chosen.push_back(list[round]);
        any = true;
      }
    if (!any) break;
  }
  std::stable_sort(chosen.begin(), chosen.end(), [](const Candidate& a, const Candidate& b) { return a.passed > b.passed; });
  return chosen;
}

}  // namespace

void add_examples_command(CLI::App& app) {
  struct Args {
    EngineFlags engine;
    int candidates = 60;
    int seeds = 4;
    int count = 8;
    bool write = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("examples", "Prompts a text bundle draws well, chosen by the prompt checker (for the studio's first-run hint)");
  a->engine.add_to(*c);
  c->add_option("--candidates", a->candidates, "Held-out captions to try (the eval protocol's first N)")
      ->check(CLI::Range(1, 2000))->capture_default_str();
  c->add_option("--seeds", a->seeds, "Seeds per caption (0 .. N-1), generated with ar at the bundle's sampling")
      ->check(CLI::Range(1, 32))->capture_default_str();
  c->add_option("--count", a->count, "Examples to keep")->check(CLI::Range(1, static_cast<int>(kMaxGuideExamples)))->capture_default_str();
  c->add_flag("--write", a->write, "Store the examples and the prompt grammar in the bundle's speculum.json (prompt_guide)");
  c->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      const EngineParams engine_params = a->engine.resolved();
      const auto engine = Engine::load(engine_params);
      if (!engine->info().text_conditioned) throw Error("examples: bundle '" + engine->info().name + "' is class-conditioned: it has no prompts");
      std::vector<Candidate> candidates;
      for (int i = 0; i < a->candidates; ++i) {
        const data::Scene scene = data::sample_scene(data::kHeldOutSceneSeeds + static_cast<std::uint64_t>(i));
        Candidate candidate{scene.caption(), data::family_name(scene.family), 0};
        const eval::ParsedPrompt parsed = eval::parse_shapes_prompt(candidate.prompt);
        for (int seed = 0; seed < a->seeds; ++seed) {
          GenerateParams p;
          p.prompt = candidate.prompt;
          p.seed = static_cast<std::uint64_t>(seed);
          p.sampling = engine->info().sampling;
          const GenerateResult r = engine->generate(p);
          candidate.passed += check_image(r.image, parsed).passed();
        }
        candidates.push_back(candidate);
        if ((i + 1) % 10 == 0) std::cerr << "examples: " << i + 1 << "/" << a->candidates << " captions\n";
      }
      const std::vector<Candidate> chosen = choose(candidates, a->seeds, a->count);
      std::cout << "examples: " << engine->info().name << ", " << a->candidates << " held-out captions x " << a->seeds
                << " seeds with ar; chosen (passed by at least half the seeds, families in turn):\n";
      for (const Candidate& e : chosen)
        std::cout << "  " << e.passed << "/" << a->seeds << "  " << std::left << std::setw(9) << e.family << std::right << e.prompt << "\n";
      if (chosen.empty()) throw Error("examples: no caption passed the checker on half of its seeds; nothing to suggest");
      if (a->write) {
        BundleManifest manifest = read_manifest(engine_params.bundle_dir);
        PromptGuide guide;
        guide.grammar = shapes_grammar();
        for (const Candidate& e : chosen) guide.examples.push_back(e.prompt);
        guide.chosen_by = "speculum-cli examples --candidates " + std::to_string(a->candidates) + " --seeds " +
                          std::to_string(a->seeds) + ": passed by the prompt checker on at least half the seeds with ar";
        manifest.prompt_guide = guide;
        write_manifest(manifest, engine_params.bundle_dir);
        std::cout << "wrote prompt_guide to " << engine_params.bundle_dir << "/speculum.json\n";
      }
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
