// speculum-cli bench: methods x seeds on one engine, alternating methods per seed after a warm-up,
// printing NFE, tau, ms per image, tokens/s, the share of time outside the target forward, and
// ratios against `ar` measured in the same run (DESIGN.md §4).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <map>
#include <set>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_options.h"
#include "common/default_bundle.h"
#include "speculum_tools.h"
#ifndef SPECULUM_ENGINE_ONLY
#include "cli/sweep_grid.h"
#include "common/speed_quality_chart.h"
#endif

namespace speculum::cli {
namespace {

constexpr int kMaxBuiltinPrompts = 100000;  // builtin:N, as many as a prompts file may hold

std::string default_prompt(const ModelInfo& info) {
  if (info.free_text) return "a red cat sitting on a blue chair";
  const std::vector<std::string> wanted = {"a", "red", "circle", "above", "a", "blue", "square"};
  std::string prompt;
  for (const auto& w : wanted) {
    if (std::find(info.text_vocab.begin(), info.text_vocab.end(), w) == info.text_vocab.end())
      return info.text_vocab.front();
    prompt += (prompt.empty() ? "" : " ") + w;
  }
  return prompt;
}

// "" -> one shard; "i/N" -> shard i of N.
std::pair<int, int> parse_shard(const std::string& text) {
  if (text.empty()) return {0, 1};
  int shard = -1, shards = 0;
  char slash = 0;
  std::istringstream in(text);
  if (!(in >> shard >> slash >> shards) || slash != '/' || !in.eof() || shards < 1 || shards > 10000 || shard < 0 || shard >= shards)
    throw Error("--shard '" + text + "': expected i/N with 0 <= i < N <= 10000");
  return {shard, shards};
}

// The prompts of a run: --prompts FILE (one per line; '#' starts a comment) or builtin:N (the eval protocol's
// first N captions; class bundles: the first N classes), else the request's prompt or a default.
std::vector<std::string> bench_prompts(const std::string& spec, const GenerateParams& request, const Engine& engine) {
  const ModelInfo& info = engine.info();
  std::vector<std::string> prompts;
  if (spec.rfind("builtin:", 0) == 0) {
    int n = 0;
    std::istringstream in(spec.substr(8));
    if (!(in >> n) || !in.eof() || n < 1 || n > kMaxBuiltinPrompts)
      throw Error("--prompts '" + spec + "': expected builtin:N with 1 <= N <= " + std::to_string(kMaxBuiltinPrompts));
    for (int i = 0; i < n; ++i)
      prompts.push_back(info.text_conditioned ? data::sample_scene(data::kHeldOutSceneSeeds + static_cast<std::uint64_t>(i)).caption()
                                              : info.classes[static_cast<std::size_t>(i) % info.classes.size()]);
  } else if (!spec.empty()) {
    prompts = engine.read_prompts(spec);
  } else if (!request.prompt.empty()) {
    prompts.push_back(request.prompt);
  } else if (info.text_conditioned) {
    prompts.push_back(default_prompt(info));
  } else {
    prompts.push_back(info.classes[static_cast<std::size_t>(std::max(request.class_id, 0))]);
  }
  return prompts;
}

// What each entry of BenchRun::methods runs: a method and its options (bench: one per method; sweep: one per
// parameter setting).
struct Variant {
  std::string method;
  MethodOptions options;
};

// Every (prompt, seed) pair of this shard, each variant in turn on it after `warmup` untimed images per variant.
// With `json_path`, the images so far are saved there every 20 s; `resume` first takes the complete pairs of
// an earlier, interrupted run of the same configuration from it.
// The prompt checker's verdict on a generated image, or nothing where it cannot judge the prompt.
using Scorer = std::function<std::optional<bool>(const std::string& prompt, const Image& image)>;
// The feature network's features of a generated image (empty where it has none).
using Featurizer = std::function<std::vector<float>(const Image& image)>;

// How each image's quality is judged: the checker and the features, where this build has them (OpenCV) and
// the bundle draws shapes captions.
struct Judges {
  Scorer score;
  Featurizer features;
};

// The judges for this run; on builtin:N prompts, also the Fréchet distance's reference data in `run`.
Judges judges_for(BenchRun& run, const std::string& prompt_spec, const std::string& bundle_dir, const ModelInfo& info) {
#ifdef SPECULUM_ENGINE_ONLY
  (void)run, (void)prompt_spec, (void)bundle_dir, (void)info;
  return {};
#else
  if (!info.text_conditioned) return {};
  Judges judges;
  judges.score = shapes_checker_verdict;  // no verdict on what is not a shapes caption (an emoji's name, say)
  auto net = FeatureExtractor::load(app::feature_net_path());
  if (!net) {
    std::cerr << "bench: no feature network at '" << app::feature_net_path()
              << "' (scripts/train-features.sh makes it): no Fréchet distance\n";
    return judges;
  }
  if (prompt_spec.rfind("builtin:", 0) == 0 && info.image_size == FeatureExtractor::kImageSize) {
    const int n = static_cast<int>(run.prompts.size());
    run.reference = "the tokenizer's reconstructions of the " + std::to_string(n) + " held-out scenes the prompts describe";
    run.reference_features = net->of_scenes(data::kHeldOutSceneSeeds, n, bundle_dir);
  }
  judges.features = [net = std::make_shared<FeatureExtractor>(std::move(*net))](const Image& image) { return net->of(image); };
  return judges;
#endif
}

void measure(Engine& engine, BenchRun& run, const std::vector<Variant>& variants, const Judges& judges, const GenerateParams& base,
             int warmup, const std::string& json_path, bool resume) {
  const ModelInfo& info = engine.info();
  std::set<std::pair<int, std::uint64_t>> done;
  if (resume && !json_path.empty() && std::filesystem::exists(json_path)) {
    const BenchRun earlier = read_bench_run(json_path, "--resume");
    run.images = finished_pairs(earlier, run, json_path);
    for (const auto& i : run.images) done.insert({i.prompt_index, i.seed});
    std::cerr << "bench: resuming with " << done.size() << " finished prompt x seed pair(s) from " << json_path << "\n";
  }
  const auto request_for = [&](std::size_t variant, int prompt, std::uint64_t seed) {
    GenerateParams p = base;
    p.method = variants[variant].method;
    p.method_options = variants[variant].options;
    p.seed = seed;
    p.class_id = -1;
    p.prompt = run.prompts[static_cast<std::size_t>(prompt)];
    return p;
  };
  // Images are (prompt, seed) pairs, every variant on each in turn; a shard takes every shards-th pair.
  std::vector<std::pair<int, std::uint64_t>> pairs;
  for (int prompt = 0; prompt < static_cast<int>(run.prompts.size()); ++prompt)
    for (int seed = 0; seed < run.seeds; ++seed)
      if ((prompt * run.seeds + seed) % run.shards == run.shard && !done.count({prompt, static_cast<std::uint64_t>(seed)}))
        pairs.push_back({prompt, static_cast<std::uint64_t>(seed)});
  std::cerr << "bench: " << info.name << " (" << info.target_summary << ") on " << info.device << ", " << run.threads
            << " threads, " << run.prompts.size() << " prompt(s) x " << run.seeds << " seed(s)"
            << (run.shards > 1 ? ", shard " + std::to_string(run.shard) + "/" + std::to_string(run.shards) : "") << ", " << warmup
            << " warm-up\n";
  for (std::size_t v = 0; v < variants.size(); ++v)
    for (int w = 0; w < warmup; ++w) engine.generate(request_for(v, 0, 1000000 + static_cast<std::uint64_t>(w)));

  const auto start = std::chrono::steady_clock::now();
  auto saved = start;
  for (std::size_t n = 0; n < pairs.size(); ++n) {
    std::vector<int> ar_tokens;  // variant 0 is ar
    for (std::size_t v = 0; v < variants.size(); ++v) {
      BenchImage image;
      image.method = run.methods[v];
      image.prompt_index = pairs[n].first;
      image.seed = pairs[n].second;
      Callbacks callbacks;
      callbacks.event = [&image](const Event& e) {
        if (const auto* verify = std::get_if<Verify>(&e)) count_verify(*verify, image);
      };
      const GenerateResult result = engine.generate(request_for(v, image.prompt_index, image.seed), callbacks);
      const RunMetrics& m = result.metrics;
      if (judges.score)
        if (const auto verdict = judges.score(run.prompts[static_cast<std::size_t>(image.prompt_index)], result.image))
          image.checked = 1, image.passed = *verdict;
      if (judges.features) image.features = judges.features(result.image);
      if (v == 0) ar_tokens = result.tokens;
      for (std::size_t t = 0; t < result.tokens.size() && t < ar_tokens.size(); ++t) image.same_as_ar += result.tokens[t] == ar_tokens[t];
      image.tokens = m.tokens;
      image.nfe = m.nfe;
      image.wall_ms = m.wall_ms;
      image.forward_ms = m.forward_ms;
      image.draft_ms = m.draft_ms;
      run.images.push_back(std::move(image));
    }
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    std::cerr << "\rbench: " << n + 1 << " / " << pairs.size() << " prompt x seed pairs, ETA "
              << static_cast<int>(elapsed / double(n + 1) * double(pairs.size() - n - 1)) << " s   " << std::flush;
    if (!json_path.empty() && std::chrono::duration<double>(now - saved).count() > 20) {
      write_text_atomically(json_path, bench_run_to_json(run).dump(1) + "\n");
      saved = now;
    }
  }
  std::cerr << "\n";
  // Resumed images came first: restore the unsharded order (prompt, seed, variant).
  std::stable_sort(run.images.begin(), run.images.end(), [&](const BenchImage& a, const BenchImage& b) {
    return std::pair{a.prompt_index, a.seed} < std::pair{b.prompt_index, b.seed};
  });
}

// The Markdown table on stdout; the JSON (every image), CSV and Markdown files where asked, each atomically.
void write_bench_outputs(const BenchRun& run, const std::string& json_path, const std::string& csv_path, const std::string& md_path,
                         const std::string& plot_path) {
  const auto rows = summarize(run);
  if (!plot_path.empty()) {
#ifdef SPECULUM_ENGINE_ONLY
    throw Error("--plot needs the full build (Qt); this is the engine-only CLI");
#else
    app::write_speed_quality_plot(run, rows, plot_path);
#endif
  }
  const std::string md = bench_markdown(run, rows);
  std::cout << md;
  if (!json_path.empty()) write_text_atomically(json_path, bench_run_to_json(run).dump(1) + "\n");
  if (!csv_path.empty()) write_text_atomically(csv_path, bench_csv(rows));
  if (!md_path.empty()) write_text_atomically(md_path, md);
}

// The flags bench and sweep share: what to run on, and where the results go.
struct RunFlags {
  std::string prompts, shard, json, csv, md, plot;
  int seeds = 3, warmup = 1;
  bool resume = false;

  void add_to(CLI::App& c) {
    c.add_option("--prompts", prompts, "FILE (one prompt or class name per line) or builtin:N (the eval protocol's first N)");
    c.add_option("--seeds", seeds, "Images per prompt and method (seeds 0..N-1)")->check(CLI::Range(1, 100000))->capture_default_str();
    c.add_option("--warmup", warmup, "Untimed runs per method first")->check(CLI::Range(0, 100))->capture_default_str();
    c.add_option("--json", json, "Also write every image's counts and times as JSON (saved as it goes; what `merge` combines)");
    c.add_option("--csv", csv, "Also write the table as CSV");
    c.add_option("--md", md, "Also write the Markdown table");
    c.add_option("--plot", plot, "Also write the speed-quality chart (PNG; shapes prompts, full build)");
    c.add_option("--shard", shard, "Run only part i of N (i/N) of the prompt x seed pairs; `merge` combines the parts' --json");
    c.add_flag("--resume", resume, "Continue the interrupted run whose --json is there (same configuration)");
  }

  // Before anything is measured: every output must be writable, or the run would be lost at its end.
  void check_outputs(const std::string& grid = {}) const {
    const std::pair<const char*, const std::string*> outputs[] = {{"--json", &json}, {"--csv", &csv}, {"--md", &md}, {"--plot", &plot}, {"--grid", &grid}};
    for (const auto& [flag, path] : outputs) {
      if (path->empty()) continue;
      const std::filesystem::path folder = std::filesystem::absolute(*path).parent_path();
      if (!std::filesystem::is_directory(folder)) throw Error(std::string(flag) + ": cannot write '" + *path + "': there is no folder '" + folder.string() + "'");
      if (::access(folder.c_str(), W_OK) != 0) throw Error(std::string(flag) + ": cannot write '" + *path + "': the folder '" + folder.string() + "' is not writable");
      check_replaceable(*path);  // a folder, FIFO or device there would only be found after the run
    }
  }
};

}  // namespace

void add_bench_command(CLI::App& app) {
  struct State {
    EngineFlags engine;
    RequestFlags request;
    std::vector<std::string> methods;
    RunFlags flags;
    bool forward_cost = false;
    bool kernels = false;
    int forward_repeats = 40;
  };
  auto s = std::make_shared<State>();
  CLI::App* c = app.add_subcommand("bench", "Benchmark methods x seeds; ratios against ar from the same run");
  s->engine.add_to(*c);
  s->request.add_to(*c, /*with_method=*/false);
  c->add_option("--methods", s->methods, "Methods to compare (default: all); ar is always included")->delimiter(',');
  s->flags.add_to(*c);
  c->add_flag("--forward-cost", s->forward_cost,
              "Instead: what one target forward of 1, 8, 16, 32 and 64 new tokens costs (after half the grid), against one");
  c->add_flag("--kernels", s->kernels,
              "Instead: what the decode step's matrix products cost by implementation and weight format (no bundle needed)");
  c->add_option("--repeats", s->forward_repeats, "With --forward-cost: timed forwards per size (the median is shown)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  c->final_callback([s] {
    const int rc = run_reporting_errors([&] {
      if (s->kernels) {
        print_kernel_study(std::cout, s->engine.params.threads);
        return;
      }
      const EngineParams engine_params = s->engine.resolved();
      const auto load_start = std::chrono::steady_clock::now();
      const auto engine = Engine::load(engine_params);
      const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
      const ModelInfo& info = engine->info();
      if (s->forward_cost) {
        std::cout << "bundle loaded in " << std::fixed << std::setprecision(1) << load_s << " s"
                  << (info.free_text ? " (T5 encoder included)" : "") << "\n";
        const int cells = info.grid_rows * info.grid_cols;
        std::vector<int> sizes;
        for (int n : {1, 8, 16, 32, 64})
          if (n <= cells / 2) sizes.push_back(n);
        const auto costs = engine->measure_forward_cost(sizes, cells / 2, s->forward_repeats);
        std::cout << "target forward of n new tokens after " << cells / 2 << " image tokens (" << info.device << ", "
                  << engine_params.threads << " threads, median of " << s->forward_repeats << ")\n"
                  << std::setw(8) << "n" << std::setw(10) << "ms" << std::setw(10) << "vs 1" << std::setw(12) << "ms/token" << "\n";
        for (const auto& c : costs)
          std::cout << std::fixed << std::setw(8) << c.new_tokens << std::setprecision(2) << std::setw(10) << c.ms << std::setw(9)
                    << c.ms / costs.front().ms << "x" << std::setprecision(3) << std::setw(12) << c.ms / c.new_tokens << "\n";
        const StepRoofline roof = engine->measure_step_roofline(std::max(10, s->forward_repeats));
        std::cout << std::setprecision(1) << "weights " << info.weight_format << ": one decode step reads " << roof.step_bytes / 1e6
                  << " MB of matrices; this machine reads that much at " << roof.step_bytes / roof.read_ms / 1e6
                  << " GB/s; roofline ms per 1-token step " << std::setprecision(3) << roof.read_ms << "\n"
                  << "1-token step against one read of its weights, alternating (median of " << std::max(10, s->forward_repeats)
                  << " pairs): " << std::setprecision(2) << roof.step_over_read << "x (step " << std::setprecision(3) << roof.step_ms
                  << " ms)\n"
                  << "main memory (" << std::setprecision(0) << roof.memory_probe_bytes / 1e6 << " MB read, beyond the "
                  << (roof.last_level_cache_bytes > 0 ? std::to_string(roof.last_level_cache_bytes >> 20) + " MiB" : std::string("unknown"))
                  << " last-level cache): " << std::setprecision(1) << roof.memory_gbs << " GB/s, " << std::setprecision(3)
                  << roof.step_bytes / roof.memory_gbs / 1e6 << " ms for one step's weights\n";
        if (info.free_text) {
          const std::string prompt = "a photo of a corgi wearing a red scarf, running on a beach at sunset, highly detailed";
          std::cout << "T5 encoder: " << std::setprecision(1) << engine->measure_caption_cost(prompt, 5)
                    << " ms per prompt (median of 5; once per prompt, reused by every method and pane)\n";
        }
        return;
      }
      BenchRun run;
      run.bundle = info.name;
      run.machine = describe_runtime(info.device);
      run.threads = engine_params.threads;
      for (const std::string& method : s->methods)
        if (method.empty() || method[0] == '-')
          throw Error("--methods: " + (method.empty() ? std::string("an empty method name") : "'" + method + "' is a flag, not a method") +
                      " (give a comma-separated list, e.g. --methods sjd,eagle)");
      run.methods = s->methods.empty() ? info.methods : s->methods;  // default: all the bundle runs
      run.methods.erase(std::remove(run.methods.begin(), run.methods.end(), "ar"), run.methods.end());
      run.methods.insert(run.methods.begin(), "ar");
      for (const auto& method : run.methods)
        if (std::find(info.methods.begin(), info.methods.end(), method) == info.methods.end()) {
          std::string available;
          for (const auto& m : info.methods) available += (available.empty() ? "" : ", ") + m;
          throw Error("bench: bundle '" + info.name + "' cannot run method '" + method + "' (available: " + available + ")");
        }
      s->flags.check_outputs();
      run.seeds = s->flags.seeds;
      std::tie(run.shard, run.shards) = parse_shard(s->flags.shard);
      GenerateParams base = s->request.resolved(info);
      run.prompts = bench_prompts(s->flags.prompts, base, *engine);

      // Method options are given as METHOD.NAME=VALUE.
      std::vector<Variant> variants;
      for (const auto& method : run.methods) {
        Variant v{method, {}};
        for (const auto& [key, value] : base.method_options)
          if (key.rfind(method + ".", 0) == 0) v.options[key.substr(method.size() + 1)] = value;
        variants.push_back(v);
      }
      const Judges judges = judges_for(run, s->flags.prompts, engine_params.bundle_dir, info);
      measure(*engine, run, variants, judges, base, s->flags.warmup, s->flags.json, s->flags.resume);
      write_bench_outputs(run, s->flags.json, s->flags.csv, s->flags.md, s->flags.plot);
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli

namespace speculum::cli {

// speculum-cli sweep: one method over a grid of one or two of its parameters, against ar, as one bench run.
void add_sweep_command(CLI::App& app) {
  struct State {
    EngineFlags engine;
    RequestFlags request;
    std::string method, grid;
    std::vector<std::string> params;
    RunFlags flags;
  };
  auto s = std::make_shared<State>();
  CLI::App* c = app.add_subcommand("sweep", "Bench one method over a grid of its parameters, against ar");
  s->engine.add_to(*c);
  s->request.add_to(*c, /*with_method=*/false);
  c->add_option("--method", s->method, "The method to sweep")->required();
  c->add_option("--param", s->params, "NAME=V1,V2,... (one or two; the grid is their product)")->required();
  s->flags.add_to(*c);
  c->add_option("--grid", s->grid, "Also write the image grid (PNG): each setting's image of the first prompt and seed, ar beside it");
  c->final_callback([s] {
    const int rc = run_reporting_errors([&] {
#ifdef SPECULUM_ENGINE_ONLY
      if (!s->grid.empty()) throw Error("--grid needs the full build (Qt); this is the engine-only CLI");
#endif
      if (s->params.size() > 2) throw Error("sweep: at most two --param axes (got " + std::to_string(s->params.size()) + ")");
      std::vector<std::pair<std::string, std::vector<double>>> axes;
      for (const auto& spec : s->params) {
        const auto eq = spec.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) throw Error("--param '" + spec + "': expected NAME=V1,V2,...");
        std::vector<double> values;
        std::istringstream list(spec.substr(eq + 1));
        for (std::string item; std::getline(list, item, ',');) {
          std::size_t used = 0;
          double v = 0;
          try {
            v = std::stod(item, &used);
          } catch (const std::exception&) {
            used = 0;
          }
          if (used == 0 || used != item.size()) throw Error("--param '" + spec + "': '" + item + "' is not a number");
          values.push_back(v);
        }
        if (values.empty() || values.size() > 64) throw Error("--param '" + spec + "': give 1 to 64 values");
        axes.push_back({spec.substr(0, eq), values});
      }
      const EngineParams engine_params = s->engine.resolved();
      const auto engine = Engine::load(engine_params);
      const ModelInfo& info = engine->info();
      if (std::find(info.methods.begin(), info.methods.end(), s->method) == info.methods.end())
        throw Error("sweep: bundle '" + info.name + "' cannot run method '" + s->method + "'");
      const auto& catalog = available_methods();
      const auto method = std::find_if(catalog.begin(), catalog.end(), [&](const MethodInfo& m) { return m.name == s->method; });
      for (const auto& [name, values] : axes) {
        const auto param = std::find_if(method->params.begin(), method->params.end(), [&](const ParamSpec& p) { return p.name == name; });
        if (param == method->params.end()) throw Error("sweep: method '" + s->method + "' has no parameter '" + name + "'");
        for (double v : values)
          if (v < param->min || v > param->max)
            throw Error("sweep: " + s->method + "." + name + " = " + std::to_string(v) + " is outside [" + std::to_string(param->min) +
                        ", " + std::to_string(param->max) + "]");
      }
      s->flags.check_outputs(s->grid);
      BenchRun run;
      run.bundle = info.name;
      run.machine = describe_runtime(info.device);
      run.threads = engine_params.threads;
      run.seeds = s->flags.seeds;
      std::tie(run.shard, run.shards) = parse_shard(s->flags.shard);
      const GenerateParams base = s->request.resolved(info);
      run.prompts = bench_prompts(s->flags.prompts, base, *engine);
      std::vector<Variant> variants = {{"ar", {}}};
      run.methods = {"ar"};
      const std::size_t second = axes.size() > 1 ? axes[1].second.size() : 1;
      for (std::size_t a = 0; a < axes[0].second.size(); ++a)
        for (std::size_t b = 0; b < second; ++b) {
          Variant v{s->method, base.method_options};  // --opt holds the swept method's other parameters
          std::ostringstream label;
          label << s->method;
          for (const auto& [name, value] : base.method_options)
            if (std::none_of(axes.begin(), axes.end(), [&](const auto& axis) { return axis.first == name; }))
              label << " " << name << "=" << value;
          for (std::size_t axis = 0; axis < axes.size(); ++axis) {
            const double value = axes[axis].second[axis == 0 ? a : b];
            v.options[axes[axis].first] = value;
            label << " " << axes[axis].first << "=" << value;
          }
          variants.push_back(v);
          run.methods.push_back(label.str());
        }
      const Judges judges = judges_for(run, s->flags.prompts, engine_params.bundle_dir, info);
      measure(*engine, run, variants, judges, base, s->flags.warmup, s->flags.json, s->flags.resume);
#ifndef SPECULUM_ENGINE_ONLY
      if (!s->grid.empty()) {  // the first prompt and seed once more per setting (same request, same tokens)
        std::vector<Image> images;
        for (const auto& v : variants) {
          GenerateParams p = base;
          p.method = v.method;
          p.method_options = v.options;
          p.prompt = run.prompts.front();
          p.class_id = -1;
          p.seed = 0;
          images.push_back(engine->generate(p).image);
        }
        std::vector<SweepAxis> grid_axes;
        for (const auto& [name, values] : axes) grid_axes.push_back({name, values});
        write_sweep_grid(s->method, grid_axes, images, "\"" + run.prompts.front() + "\", seed 0", s->grid);
        // The result names its grid (relative to itself) so that the studio can show both.
        if (!s->flags.json.empty())
          run.grid = std::filesystem::absolute(s->grid).lexically_relative(std::filesystem::absolute(s->flags.json).parent_path()).string();
      }
#endif
      write_bench_outputs(run, s->flags.json, s->flags.csv, s->flags.md, s->flags.plot);
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

void add_merge_command(CLI::App& app) {
  auto parts = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::array<std::string, 4>>();
  CLI::App* c = app.add_subcommand("merge", "Combine the --json results of bench shards into the run one bench would have made");
  c->add_option("parts", *parts, "bench --json files, one per shard")->required();  // the reader checks each path
  c->add_option("--json", (*out)[0], "Write the merged JSON");
  c->add_option("--csv", (*out)[1], "Write the table as CSV");
  c->add_option("--md", (*out)[2], "Write the Markdown table");
  c->add_option("--plot", (*out)[3], "Write the speed-quality chart (PNG; needs checker verdicts)");
  c->final_callback([parts, out] {
    const int rc = run_reporting_errors([&] {
      std::vector<BenchRun> runs;
      for (const auto& path : *parts) {
        runs.push_back(read_bench_run(path, "merge"));
      }
      write_bench_outputs(merge_bench_runs(runs), (*out)[0], (*out)[1], (*out)[2], (*out)[3]);
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
