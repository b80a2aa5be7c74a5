// speculum-cli compare: the model card's quality tolerance, applied. Pairs two `eval --csv` runs prompt by
// prompt (same held-out scenes), and reports both accuracies, the paired difference with its 95 % interval
// (McNemar: only prompts where exactly one run passes carry information), per family, and the verdict: the
// candidate fails when its accuracy is more than --tolerance points below the reference's.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/cli_options.h"
#include "cli/eval_records.h"
#include "speculum_tools.h"

namespace speculum::cli {
namespace {

using Paired = PairedVerdicts;

std::string points(double share) {
  std::ostringstream out;
  out << std::showpos << std::fixed << std::setprecision(1) << 100 * share;
  return out.str();
}

void print_row(const std::string& name, const Paired& p) {
  // The normal approximation can overshoot on a handful of prompts; a difference lies in [-1, 1].
  const double half = 1.96 * p.standard_error();
  const std::string interval =
      "[" + points(std::max(-1.0, p.difference() - half)) + ", " + points(std::min(1.0, p.difference() + half)) + "]";
  std::cout << "  " << std::left << std::setw(9) << name << std::right << std::setw(6) << p.n << std::setw(9)
            << std::fixed << std::setprecision(1) << 100.0 * p.reference / p.n << " %" << std::setw(9)
            << 100.0 * p.candidate / p.n << " %" << std::setw(8) << points(p.difference()) << "  " << std::left
            << std::setw(17) << interval << std::right << std::setw(8) << p.reference_only << std::setw(10)
            << p.candidate_only << "\n";
}

}  // namespace

void add_compare_command(CLI::App& app) {
  struct Args {
    std::string reference, candidate;
    double tolerance = 3;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("compare",
                                   "Pair two `eval --csv` runs prompt by prompt: accuracies, paired difference, the "
                                   "tolerance verdict (exit code 2 when outside it)");
  c->add_option("reference", a->reference, "The reference run's CSV (ar)")->required();
  c->add_option("candidate", a->candidate, "The candidate run's CSV (the method judged)")->required();
  c->add_option("--tolerance", a->tolerance, "Points the candidate may fall below the reference")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  c->final_callback([a] {
    bool within = true;
    const int rc = run_reporting_errors([&] {
      const auto ref = read_eval_csv(a->reference), cand = read_eval_csv(a->candidate);
      if (ref.size() != cand.size())
        throw Error("'" + a->reference + "' has " + std::to_string(ref.size()) + " prompts, '" + a->candidate + "' " +
                    std::to_string(cand.size()) + ": compare runs over the same --prompts");
      Paired all;
      std::map<std::string, Paired> by_family;
      bool same_seeds = true;
      for (std::size_t i = 0; i < ref.size(); ++i) {
        if (ref[i].scene_seed != cand[i].scene_seed || ref[i].caption != cand[i].caption)
          throw Error("row " + std::to_string(i + 1) + " pairs different prompts: '" + ref[i].caption + "' (scene " +
                      std::to_string(ref[i].scene_seed) + ") vs. '" + cand[i].caption + "' (scene " +
                      std::to_string(cand[i].scene_seed) + ")");
        same_seeds = same_seeds && ref[i].seed == cand[i].seed;
        all.add(ref[i].passed, cand[i].passed);
        by_family[ref[i].family].add(ref[i].passed, cand[i].passed);
      }
      std::cout << "compare: " << all.n << " prompts paired by scene; "
                << (same_seeds ? "same generation seeds" : "different generation seeds (independent draws)") << "\n"
                << "  prompts       n  reference  candidate  difference, 95 % interval  ref-only  cand-only\n";
      print_row("all", all);
      for (const auto& [family, p] : by_family) print_row(family, p);
      const double d = double(all.reference_only + all.candidate_only) / all.n;
      std::cout << "  discordant share d = " << std::setprecision(3) << d << "; 95 % half-width "
                << std::setprecision(1) << 196 * all.standard_error() << " points\n";
      within = 100.0 * (all.candidate - all.reference) >= -a->tolerance * all.n;  // exact at the boundary
      std::cout << "verdict: " << (within ? "within" : "OUTSIDE") << " tolerance (candidate "
                << points(all.difference()) << " points against the reference; allowed: -" << std::defaultfloat
                << std::setprecision(6) << a->tolerance << ")\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
    if (!within) throw CLI::RuntimeError(2);
  });
}

}  // namespace speculum::cli
