// What `speculum-cli bench` measures, image by image, and the tables made from it. A run (or one shard of
// it) is a list of per-image records with numerators and denominators, never only ratios, so that shards
// merge exactly and every summary can be recomputed from the file (docs/metrics.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "trace/events.h"

namespace speculum {

// Two methods' pass / fail verdicts on the same prompts and seeds: the paired difference of their pass rates
// and its standard error (from the discordant pairs, as McNemar's test).
struct PairedVerdicts {
  int n = 0, reference = 0, candidate = 0;
  int reference_only = 0, candidate_only = 0;  // the discordant pairs
  void add(bool ref, bool cand);
  double difference() const { return n ? double(candidate - reference) / n : 0; }  // candidate - reference
  double standard_error() const;
};

struct BenchImage {
  std::string method;
  int prompt_index = 0;  // into BenchRun::prompts
  std::uint64_t seed = 0;
  int tokens = 0;
  int nfe = 0;
  long drafted = 0;   // draft tokens verified
  long accepted = 0;  // of which accepted (strict or soft)
  // Per draft position k (the k-th draft token a step verifies): verified and accepted counts.
  std::vector<long> drafted_at;
  std::vector<long> accepted_at;
  double wall_ms = 0;
  double forward_ms = 0;  // inside target forwards
  double draft_ms = 0;    // drafting (drafters, heads, up-sampling); the rest (sampling, bookkeeping) is wall - forward - draft
  int same_as_ar = 0;  // tokens equal to ar's image for the same prompt and seed (greedy: lossless methods give all)
  int checked = 0;  // 1 when the prompt checker scored the image (shapes captions, full builds)
  int passed = 0;   // 1 when every claim of the prompt held
  // The shapes feature network's features of the image (kFeatureNetFeatures values, rounded to 1e-4 so that the
  // file holds exactly what was summarised); empty where the image is not a 64x64 shapes image.
  std::vector<float> features;
};

// Counts one Verify event into `image`.
void count_verify(const Verify& verify, BenchImage& image);

struct BenchRun {
  std::string bundle;
  std::string machine;  // CPU model and cores, LibTorch and BLAS, device
  int threads = 0;
  std::vector<std::string> methods;  // "ar" first
  std::vector<std::string> prompts;
  int seeds = 0;        // per prompt: 0..seeds-1
  int shard = 0;        // this part: images i with i % shards == shard
  int shards = 1;
  std::vector<BenchImage> images;
  // The data the Fréchet distance compares against (builtin prompts on a shapes bundle: the tokenizer's
  // reconstructions of the prompts' own held-out scenes) and its features; empty when there is none.
  std::string reference;
  std::vector<std::vector<float>> reference_features;
  std::string grid;  // sweep --grid: the image grid's PNG, relative to the result file ("" when none)
  // The images a complete run holds: every prompt x seed x method.
  std::size_t expected_images() const { return prompts.size() * static_cast<std::size_t>(seeds) * methods.size(); }
};

nlohmann::json bench_run_to_json(const BenchRun& run);
// Throws Error naming `where` and the field at fault.
BenchRun bench_run_from_json(const nlohmann::json& doc, const std::string& where);

// A result file (at most 256 MiB); errors name `what` (the command or view reading it), the file and the field.
BenchRun read_bench_run(const std::string& path, const std::string& what);

// Combines shards of one run (same bundle, methods, prompts, seeds, shard count; each shard once) into the
// run an unsharded bench would have written, images in the same order. Throws Error on any mismatch.
BenchRun merge_bench_runs(const std::vector<BenchRun>& parts);

// Resuming: the images of `earlier` (an interrupted run saved at `where`) whose prompt x seed pair is
// complete, every method measured. Throws Error when `earlier` is not the configuration of `run`.
std::vector<BenchImage> finished_pairs(const BenchRun& earlier, const BenchRun& run, const std::string& where);

struct Spread {
  double median = 0, q1 = 0, q3 = 0;  // quartiles by linear interpolation
};
Spread spread_of(std::vector<double> values);

struct BenchRow {
  std::string method;
  int images = 0;
  long tokens = 0, nfe = 0, drafted = 0, accepted = 0;
  double wall_ms = 0, forward_ms = 0, draft_ms = 0;
  Spread ms_per_image;
  Spread speedup;  // per image: ar's wall time for the same prompt and seed over this method's
  long same_as_ar = 0;  // over `tokens`: agreement with ar's images token by token
  int checked = 0, passed = 0;
  PairedVerdicts vs_ar;  // checker verdicts paired with ar's on the same prompt and seed
  int featured = 0;  // images with features
  std::optional<double> fd_reference;  // Fréchet distance of this method's images to the run's reference data
  std::optional<double> fd_ar;         // ... and to ar's images of the same run (not for ar itself)
  double nfe_per_image() const { return images ? double(nfe) / images : 0; }
  double tau() const { return nfe ? double(tokens) / nfe : 0; }
  double acceptance() const { return drafted ? double(accepted) / drafted : 0; }
  double outside_forward_share() const { return wall_ms > 0 ? 1 - forward_ms / wall_ms : 0; }
  double draft_share() const { return wall_ms > 0 ? draft_ms / wall_ms : 0; }
};

// One row per method (in run order); speed-ups pair each image with ar's for the same prompt and seed.
std::vector<BenchRow> summarize(const BenchRun& run);

// The tables: CSV (counts first, then times) and Markdown (with the run's machine, threads and bundle).
std::string bench_csv(const std::vector<BenchRow>& rows);
std::string bench_markdown(const BenchRun& run, const std::vector<BenchRow>& rows);

}  // namespace speculum
