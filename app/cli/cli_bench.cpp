// speculum-cli bench: methods x seeds on one engine, alternating methods per seed after a warm-up,
// printing NFE, tau, ms per image, tokens/s, the share of time outside the target forward, and
// ratios against `ar` measured in the same run (DESIGN.md §4).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/cli_options.h"
#include "io/atomic_file.h"

namespace speculum::cli {
namespace {

struct Totals {
  int images = 0;
  long tokens = 0, nfe = 0;
  double wall_ms = 0, forward_ms = 0;
};

std::string default_prompt(const ModelInfo& info) {
  const std::vector<std::string> wanted = {"a", "red", "circle", "above", "a", "blue", "square"};
  std::string prompt;
  for (const auto& w : wanted) {
    if (std::find(info.text_vocab.begin(), info.text_vocab.end(), w) == info.text_vocab.end())
      return info.text_vocab.front();
    prompt += (prompt.empty() ? "" : " ") + w;
  }
  return prompt;
}

}  // namespace

void add_bench_command(CLI::App& app) {
  struct State {
    EngineFlags engine;
    RequestFlags request;
    std::vector<std::string> methods;
    int seeds = 3;
    int warmup = 1;
    std::string csv;
    bool forward_cost = false;
  };
  auto s = std::make_shared<State>();
  CLI::App* c = app.add_subcommand("bench", "Benchmark methods x seeds; ratios against ar from the same run");
  s->engine.add_to(*c);
  s->request.add_to(*c, /*with_method=*/false);
  c->add_option("--methods", s->methods, "Methods to compare (default: all); ar is always included")->delimiter(',');
  c->add_option("--seeds", s->seeds, "Images per method (seeds 0..N-1)")->check(CLI::Range(1, 100000))->capture_default_str();
  c->add_option("--warmup", s->warmup, "Untimed runs per method first")->check(CLI::Range(0, 100))->capture_default_str();
  c->add_option("--csv", s->csv, "Also write the table as CSV");
  c->add_flag("--forward-cost", s->forward_cost,
              "Instead: what one target forward of 1, 8, 16, 32 and 64 new tokens costs (after half the grid), against one");
  c->final_callback([s] {
    const int rc = run_reporting_errors([&] {
      const EngineParams engine_params = s->engine.resolved();
      const auto engine = Engine::load(engine_params);
      const ModelInfo& info = engine->info();
      if (s->forward_cost) {
        const int cells = info.grid_rows * info.grid_cols;
        std::vector<int> sizes;
        for (int n : {1, 8, 16, 32, 64})
          if (n <= cells / 2) sizes.push_back(n);
        const auto costs = engine->measure_forward_cost(sizes, cells / 2, 40);
        std::cout << "target forward of n new tokens after " << cells / 2 << " image tokens (" << info.device << ", "
                  << engine_params.threads << " threads, median of 40)\n"
                  << std::setw(8) << "n" << std::setw(10) << "ms" << std::setw(10) << "vs 1" << std::setw(12) << "ms/token" << "\n";
        for (const auto& c : costs)
          std::cout << std::fixed << std::setw(8) << c.new_tokens << std::setprecision(2) << std::setw(10) << c.ms << std::setw(9)
                    << c.ms / costs.front().ms << "x" << std::setprecision(3) << std::setw(12) << c.ms / c.new_tokens << "\n";
        return;
      }
      std::vector<std::string> methods = s->methods.empty() ? info.methods : s->methods;  // default: all the bundle runs
      methods.erase(std::remove(methods.begin(), methods.end(), "ar"), methods.end());
      methods.insert(methods.begin(), "ar");
      GenerateParams base = s->request.resolved(info);
      if (info.text_conditioned && base.prompt.empty()) base.prompt = default_prompt(info);

      // Method options are given as METHOD.NAME=VALUE.
      auto request_for = [&](const std::string& method, std::uint64_t seed) {
        GenerateParams p = base;
        p.method = method;
        p.seed = seed;
        p.method_options.clear();
        for (const auto& [key, value] : base.method_options)
          if (key.rfind(method + ".", 0) == 0) p.method_options[key.substr(method.size() + 1)] = value;
        if (!info.text_conditioned && base.class_id < 0 && base.prompt.empty())
          p.class_id = static_cast<int>(seed % info.classes.size());
        return p;
      };

      std::cerr << "bench: " << info.name << " (" << info.target_summary << ") on " << info.device << ", "
                << engine_params.threads << " threads, " << s->seeds << " seeds, " << s->warmup << " warm-up\n";
      for (const auto& m : methods)
        for (int w = 0; w < s->warmup; ++w) engine->generate(request_for(m, 1000000 + w));

      std::vector<Totals> totals(methods.size());
      for (int seed = 0; seed < s->seeds; ++seed) {
        for (std::size_t i = 0; i < methods.size(); ++i) {
          const RunMetrics m = engine->generate(request_for(methods[i], seed)).metrics;
          Totals& t = totals[i];
          ++t.images;
          t.tokens += m.tokens;
          t.nfe += m.nfe;
          t.wall_ms += m.wall_ms;
          t.forward_ms += m.forward_ms;
        }
      }

      const Totals& ar = totals.front();
      const double ar_ms = ar.wall_ms / ar.images, ar_nfe = double(ar.nfe) / ar.images;
      std::ostringstream csv;
      csv << "method,images,nfe,tau,ms_per_image,ms_per_forward,ms_per_token,tokens_per_s,outside_forward_share,nfe_ratio_vs_ar,"
             "speedup_vs_ar\n";
      std::cout << std::left << std::setw(10) << "method" << std::right << std::setw(7) << "images" << std::setw(9)
                << "NFE" << std::setw(7) << "tau" << std::setw(11) << "ms/image" << std::setw(9) << "ms/fwd" << std::setw(10) << "ms/token"
                << std::setw(10) << "tok/s" << std::setw(12) << "outside fwd" << std::setw(11) << "NFE/ar"
                << std::setw(10) << "speed-up" << "\n";
      for (std::size_t i = 0; i < methods.size(); ++i) {
        const Totals& t = totals[i];
        const double nfe = double(t.nfe) / t.images, ms = t.wall_ms / t.images;
        const double tau = t.nfe ? double(t.tokens) / t.nfe : 0, per_token = t.tokens ? t.wall_ms / t.tokens : 0;
        const double per_forward = t.nfe ? t.forward_ms / t.nfe : 0;  // a tree or window forward against ar's one token
        const double tps = t.wall_ms > 0 ? t.tokens * 1000.0 / t.wall_ms : 0;
        const double outside = t.wall_ms > 0 ? 1.0 - t.forward_ms / t.wall_ms : 0;
        std::cout << std::left << std::setw(10) << methods[i] << std::right << std::fixed << std::setw(7) << t.images
                  << std::setprecision(1) << std::setw(9) << nfe << std::setprecision(2) << std::setw(7) << tau
                  << std::setprecision(1) << std::setw(11) << ms << std::setprecision(2) << std::setw(9) << per_forward
                  << std::setprecision(3) << std::setw(10) << per_token
                  << std::setprecision(0) << std::setw(10) << tps << std::setprecision(1) << std::setw(11)
                  << outside * 100 << "%" << std::setprecision(3) << std::setw(11) << nfe / ar_nfe
                  << std::setprecision(2) << std::setw(9) << ar_ms / ms << "x\n";
        csv << methods[i] << "," << t.images << "," << nfe << "," << tau << "," << ms << "," << per_forward << "," << per_token << ","
            << tps << "," << outside << "," << nfe / ar_nfe << "," << ar_ms / ms << "\n";
      }
      if (!s->csv.empty()) write_text_atomically(s->csv, csv.str());
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
