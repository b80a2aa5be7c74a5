#include "trace/bench_records.h"

#include "io/input_file.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "error.h"
#include "io/json_fields.h"
#include "io/limits.h"
#include "trace/frechet_distance.h"

namespace speculum {
namespace {

using nlohmann::json;

template <typename T>
T field(const json& object, const char* name, const std::string& where) {
  if (!object.is_object() || !object.contains(name)) throw Error(where + ": field '" + name + "' is missing");
  try {
    return object.at(name).get<T>();
  } catch (const json::exception&) {
    throw Error(where + ": field '" + name + "' has the wrong type");
  }
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string fixed(const std::optional<double>& v, int digits, const char* none) { return v ? fixed(*v, digits) : none; }

// Parts of one run: the same bundle, methods, prompts, seeds, threads and shard count (the shard may differ).
bool same_run(const BenchRun& a, const BenchRun& b) {
  return a.bundle == b.bundle && a.methods == b.methods && a.prompts == b.prompts && a.seeds == b.seeds && a.shards == b.shards &&
         a.threads == b.threads && a.reference == b.reference && a.reference_features == b.reference_features;
}

}  // namespace

void PairedVerdicts::add(bool ref, bool cand) {
  ++n, reference += ref, candidate += cand;
  reference_only += ref && !cand, candidate_only += cand && !ref;
}

double PairedVerdicts::standard_error() const {
  if (n == 0) return 0;
  const double discordant = reference_only + candidate_only, diff = candidate_only - reference_only;
  return std::sqrt(std::max(0.0, discordant - diff * diff / n)) / n;
}

void count_verify(const Verify& verify, BenchImage& image) {
  for (std::size_t k = 0; k < verify.decisions.size(); ++k) {
    if (image.drafted_at.size() <= k) {
      image.drafted_at.resize(k + 1, 0);
      image.accepted_at.resize(k + 1, 0);
    }
    const bool accepted = verify.decisions[k] != Decision::Reject;
    ++image.drafted, ++image.drafted_at[k];
    image.accepted += accepted, image.accepted_at[k] += accepted;
  }
}

json bench_run_to_json(const BenchRun& run) {
  json images = json::array();
  for (const auto& i : run.images)
    images.push_back({{"method", i.method}, {"prompt", i.prompt_index}, {"seed", i.seed}, {"tokens", i.tokens}, {"nfe", i.nfe},
                      {"drafted", i.drafted}, {"accepted", i.accepted}, {"drafted_at", i.drafted_at},
                      {"accepted_at", i.accepted_at}, {"wall_ms", i.wall_ms}, {"forward_ms", i.forward_ms}, {"draft_ms", i.draft_ms}, {"same_as_ar", i.same_as_ar}, {"checked", i.checked}, {"passed", i.passed}, {"features", i.features}});
  return {{"format", "speculum-bench/1"}, {"bundle", run.bundle}, {"machine", run.machine}, {"threads", run.threads},
          {"methods", run.methods}, {"prompts", run.prompts}, {"seeds", run.seeds}, {"shard", run.shard},
          {"shards", run.shards}, {"reference", {{"what", run.reference}, {"features", run.reference_features}}}, {"grid", run.grid}, {"images", images}};
}

namespace {

// What one image's record can hold, checked where it is read: a table is only as good as its rows.
void check_image_counts(const BenchImage& b, const BenchRun& run, const std::string& at) {
  const auto fail = [&](const std::string& what) { throw Error(at + ": " + what); };
  const int max_tokens = limits::kMaxGridSide * limits::kMaxGridSide;
  if (b.seed >= static_cast<std::uint64_t>(run.seeds))
    fail("field 'seed' (" + std::to_string(b.seed) + ") is outside the run's seeds 0.." + std::to_string(run.seeds - 1));
  if (b.tokens < 1 || b.tokens > max_tokens) fail("field 'tokens' must be in [1, " + std::to_string(max_tokens) + "]");
  if (b.nfe < 1 || b.nfe > limits::kMaxStepPasses * max_tokens) fail("field 'nfe' must be at least 1");
  if (b.drafted < 0 || b.accepted < 0 || b.accepted > b.drafted)
    fail("fields 'drafted' (" + std::to_string(b.drafted) + ") and 'accepted' (" + std::to_string(b.accepted) +
         ") must be counts with accepted <= drafted");
  if (b.drafted_at.size() != b.accepted_at.size()) fail("fields 'drafted_at' and 'accepted_at' differ in length");
  for (std::size_t k = 0; k < b.drafted_at.size(); ++k)
    if (b.drafted_at[k] < 0 || b.accepted_at[k] < 0 || b.accepted_at[k] > b.drafted_at[k])
      fail("draft position " + std::to_string(k) + ": 'accepted_at' must be a count at most 'drafted_at'");
  for (const auto& [name, ms] : {std::pair{"wall_ms", b.wall_ms}, {"forward_ms", b.forward_ms}, {"draft_ms", b.draft_ms}})
    if (!std::isfinite(ms) || ms < 0 || (ms == 0 && std::string(name) == "wall_ms"))
      fail(std::string("field '") + name + "' must be a time in ms (" + (std::string(name) == "wall_ms" ? "> 0" : ">= 0") + ")");
  if (b.same_as_ar < 0 || b.same_as_ar > b.tokens) fail("field 'same_as_ar' must be a count of the image's tokens");
  if (b.checked < 0 || b.checked > 1 || b.passed < 0 || b.passed > b.checked)
    fail("fields 'checked' and 'passed' must be 0 or 1, passed only when checked");
  if (!b.features.empty() && !run.reference_features.empty() && b.features.size() != run.reference_features.front().size())
    fail("field 'features' has " + std::to_string(b.features.size()) + " values; the reference's have " +
         std::to_string(run.reference_features.front().size()));
}

}  // namespace

BenchRun bench_run_from_json(const json& doc, const std::string& where) {
  if (field<std::string>(doc, "format", where) != "speculum-bench/1")
    throw Error(where + ": format is not 'speculum-bench/1' (not a bench result)");
  BenchRun run;
  run.bundle = field<std::string>(doc, "bundle", where);
  run.machine = field<std::string>(doc, "machine", where);
  run.threads = field<int>(doc, "threads", where);
  run.methods = field<std::vector<std::string>>(doc, "methods", where);
  run.prompts = field<std::vector<std::string>>(doc, "prompts", where);
  run.seeds = field<int>(doc, "seeds", where);
  run.shard = field<int>(doc, "shard", where);
  run.shards = field<int>(doc, "shards", where);
  if (run.methods.empty() || run.methods.front() != "ar") throw Error(where + ": methods must start with 'ar'");
  if (run.seeds < 1 || run.shards < 1 || run.shard < 0 || run.shard >= run.shards)
    throw Error(where + ": seeds, shard or shards out of range");
  if (doc.contains("grid")) run.grid = field<std::string>(doc, "grid", where);
  if (doc.contains("reference")) {  // results written before the Fréchet distance have none
    run.reference = field<std::string>(doc.at("reference"), "what", where + ": reference");
    run.reference_features = field<std::vector<std::vector<float>>>(doc.at("reference"), "features", where + ": reference");
  }
  const json& images = doc.at("images");
  if (!images.is_array()) throw Error(where + ": field 'images' is not a list");
  for (std::size_t n = 0; n < images.size(); ++n) {
    const std::string at = where + ": images[" + std::to_string(n) + "]";
    const json& i = images[n];
    BenchImage b;
    b.method = field<std::string>(i, "method", at);
    b.prompt_index = field<int>(i, "prompt", at);
    b.seed = field<std::uint64_t>(i, "seed", at);
    b.tokens = field<int>(i, "tokens", at);
    b.nfe = field<int>(i, "nfe", at);
    b.drafted = field<long>(i, "drafted", at);
    b.accepted = field<long>(i, "accepted", at);
    b.drafted_at = field<std::vector<long>>(i, "drafted_at", at);
    b.accepted_at = field<std::vector<long>>(i, "accepted_at", at);
    b.wall_ms = field<double>(i, "wall_ms", at);
    b.forward_ms = field<double>(i, "forward_ms", at);
    b.draft_ms = field<double>(i, "draft_ms", at);
    b.same_as_ar = field<int>(i, "same_as_ar", at);
    b.checked = field<int>(i, "checked", at);
    b.passed = field<int>(i, "passed", at);
    if (i.contains("features")) b.features = field<std::vector<float>>(i, "features", at);
    if (b.prompt_index < 0 || b.prompt_index >= static_cast<int>(run.prompts.size()) ||
        std::find(run.methods.begin(), run.methods.end(), b.method) == run.methods.end())
      throw Error(at + ": names a prompt or method the run does not have");
    check_image_counts(b, run, at);
    for (const BenchImage& earlier : run.images)  // one feature network per run: one length
      if (!b.features.empty() && !earlier.features.empty() && earlier.features.size() != b.features.size())
        throw Error(at + ": field 'features' has " + std::to_string(b.features.size()) + " values, an earlier image's " +
                    std::to_string(earlier.features.size()));
    run.images.push_back(std::move(b));
  }
  return run;
}

BenchRun read_bench_run(const std::string& path, const std::string& what) {
  constexpr std::size_t kMaxBytes = 256u << 20;
  std::string text;
  try {
    text = read_input_file(path, kMaxBytes, "bench results");  // regular files only, size bounded first
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  return bench_run_from_json(parse_untrusted_json(text, path, 16), path);
}

BenchRun merge_bench_runs(const std::vector<BenchRun>& parts) {
  if (parts.empty()) throw Error("merge: no bench results given");
  const BenchRun& first = parts.front();
  std::set<int> seen;
  for (const auto& p : parts) {
    if (!same_run(p, first))
      throw Error("merge: the parts come from different runs (bundle, methods, prompts, seeds, threads or shard count differ)");
    if (!seen.insert(p.shard).second) throw Error("merge: shard " + std::to_string(p.shard) + " is given twice");
  }
  if (static_cast<int>(seen.size()) != first.shards)
    throw Error("merge: " + std::to_string(seen.size()) + " of " + std::to_string(first.shards) + " shards given");
  BenchRun merged = first;
  merged.shard = 0;
  merged.shards = 1;
  merged.images.clear();
  std::map<std::tuple<int, std::uint64_t, int>, const BenchImage*> by_key;  // (prompt, seed, method) -> image
  for (const auto& p : parts)
    for (const auto& i : p.images) {
      const int m = static_cast<int>(std::find(first.methods.begin(), first.methods.end(), i.method) - first.methods.begin());
      if (!by_key.emplace(std::tuple{i.prompt_index, i.seed, m}, &i).second)
        throw Error("merge: prompt " + std::to_string(i.prompt_index) + ", seed " + std::to_string(i.seed) + ", method " + i.method +
                    " appears twice");
    }
  // The unsharded order: prompt by prompt, seed by seed, methods alternating.
  for (const auto& [key, image] : by_key) merged.images.push_back(*image);
  if (merged.images.size() != merged.expected_images())
    throw Error("merge: " + std::to_string(merged.images.size()) + " images, a complete run has " +
                std::to_string(merged.expected_images()) + " (a shard was interrupted: resume it first)");
  return merged;
}

std::vector<BenchImage> finished_pairs(const BenchRun& earlier, const BenchRun& run, const std::string& where) {
  if (!same_run(earlier, run) || earlier.shard != run.shard)
    throw Error("--resume: '" + where + "' holds a different run (bundle, methods, prompts, seeds, shard or threads differ)");
  std::map<std::pair<int, std::uint64_t>, std::size_t> count;
  for (const auto& i : earlier.images) ++count[{i.prompt_index, i.seed}];
  std::vector<BenchImage> kept;
  for (const auto& i : earlier.images)
    if (count[{i.prompt_index, i.seed}] == run.methods.size()) kept.push_back(i);
  return kept;
}

Spread spread_of(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  return {quantile(0.5), quantile(0.25), quantile(0.75)};
}

std::vector<BenchRow> summarize(const BenchRun& run) {
  std::map<std::pair<int, std::uint64_t>, const BenchImage*> ar_image;
  std::map<std::string, FeatureVectors> features;  // per method
  for (const auto& i : run.images) {
    if (i.method == "ar") ar_image[{i.prompt_index, i.seed}] = &i;
    if (!i.features.empty()) features[i.method].push_back(i.features);
  }
  std::vector<BenchRow> rows;
  for (const auto& method : run.methods) {
    BenchRow row;
    row.method = method;
    std::vector<double> ms, speedups;
    for (const auto& i : run.images) {
      if (i.method != method) continue;
      ++row.images;
      row.tokens += i.tokens, row.nfe += i.nfe, row.drafted += i.drafted, row.accepted += i.accepted;
      row.wall_ms += i.wall_ms, row.forward_ms += i.forward_ms, row.draft_ms += i.draft_ms;
      ms.push_back(i.wall_ms);
      row.checked += i.checked, row.passed += i.passed, row.same_as_ar += i.same_as_ar;
      const auto ar = ar_image.find({i.prompt_index, i.seed});
      if (ar == ar_image.end()) continue;
      if (i.wall_ms > 0) speedups.push_back(ar->second->wall_ms / i.wall_ms);
      if (i.checked && ar->second->checked) row.vs_ar.add(ar->second->passed, i.passed);
    }
    row.ms_per_image = spread_of(ms);
    row.speedup = spread_of(speedups);
    const FeatureVectors& mine = features[method];
    row.featured = static_cast<int>(mine.size());
    row.fd_reference = frechet_distance(mine, run.reference_features);
    if (method != "ar") row.fd_ar = frechet_distance(mine, features["ar"]);
    rows.push_back(row);
  }
  return rows;
}

std::string bench_csv(const std::vector<BenchRow>& rows) {
  std::ostringstream csv;
  csv << "method,images,tokens,nfe,drafted,accepted,nfe_per_image,tau,acceptance,same_as_ar,checked,passed,"
         "vs_ar_points,vs_ar_half_width_95,fd_reference,fd_ar,ms_per_image_median,ms_per_image_q1,"
         "ms_per_image_q3,outside_forward_share,draft_share,speedup_median,speedup_q1,speedup_q3\n";
  for (const auto& r : rows)
    csv << r.method << "," << r.images << "," << r.tokens << "," << r.nfe << "," << r.drafted << "," << r.accepted << ","
        << fixed(r.nfe_per_image(), 2) << "," << fixed(r.tau(), 4) << "," << fixed(r.acceptance(), 4) << "," << r.same_as_ar << "," << r.checked << ","
        << r.passed << "," << fixed(100 * r.vs_ar.difference(), 2) << "," << fixed(196 * r.vs_ar.standard_error(), 2) << ","
        << fixed(r.fd_reference, 3, "") << "," << fixed(r.fd_ar, 3, "") << "," << fixed(r.ms_per_image.median, 2) << "," << fixed(r.ms_per_image.q1, 2) << "," << fixed(r.ms_per_image.q3, 2) << ","
        << fixed(r.outside_forward_share(), 4) << "," << fixed(r.draft_share(), 4) << "," << fixed(r.speedup.median, 4) << "," << fixed(r.speedup.q1, 4) << ","
        << fixed(r.speedup.q3, 4) << "\n";
  return csv.str();
}

std::string bench_markdown(const BenchRun& run, const std::vector<BenchRow>& rows) {
  std::ostringstream md;
  const bool quality = std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.checked > 0; });
  const bool distance = std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.fd_reference || r.fd_ar; });
  md << "Bundle `" << run.bundle << "`; " << run.prompts.size() << " prompt(s) x " << run.seeds << " seed(s) per method, methods "
     << "alternating per image; " << run.threads << " thread(s); " << run.machine << ".\n\n"
     << "| method | images | NFE / image | τ | acceptance | same tokens as `ar` | ms / image, median [IQR] | "
        "outside the forward (drafting) | speed-up vs `ar`, median [IQR] |"
     << (quality ? " checker passed | vs `ar`, points [95 %] |" : "") << (distance ? " FD to data | FD to `ar` |" : "")
     << "\n|---|---|---|---|---|---|---|---|---|" << (quality ? "---|---|" : "") << (distance ? "---|---|" : "") << "\n";
  for (const auto& r : rows) {
    md << "| `" << r.method << "` | " << r.images << " | " << fixed(r.nfe_per_image(), 1) << " | " << fixed(r.tau(), 2) << " | "
       << (r.drafted ? fixed(100 * r.acceptance(), 1) + " % (" + std::to_string(r.accepted) + " / " + std::to_string(r.drafted) + ")"
                     : std::string("—"))
       << " | " << (r.tokens ? fixed(100.0 * r.same_as_ar / r.tokens, 1) + " %" : std::string("—"))
       << " | " << fixed(r.ms_per_image.median, 1) << " [" << fixed(r.ms_per_image.q1, 1) << ", " << fixed(r.ms_per_image.q3, 1)
       << "] | " << fixed(100 * r.outside_forward_share(), 1) << " % (" << fixed(100 * r.draft_share(), 1) << " %) | " << fixed(r.speedup.median, 2) << "× ["
       << fixed(r.speedup.q1, 2) << ", " << fixed(r.speedup.q3, 2) << "] |";
    if (quality) {
      const double d = 100 * r.vs_ar.difference(), half = 196 * r.vs_ar.standard_error();
      md << " " << (r.checked ? fixed(100.0 * r.passed / r.checked, 1) + " % (" + std::to_string(r.passed) + " / " +
                                    std::to_string(r.checked) + ")"
                              : std::string("—"))
         << " | " << (r.method == "ar" ? std::string("—") : (d >= 0 ? "+" : "") + fixed(d, 1) + " [" + fixed(d - half, 1) + ", " +
                                                               fixed(d + half, 1) + "]")
         << " |";
    }
    if (distance) md << " " << fixed(r.fd_reference, 2, "—") << " | " << fixed(r.fd_ar, 2, "—") << " |";
    md << "\n";
  }
  if (distance)
    md << "\nFD: Fréchet distance on the shapes feature network's features (docs/metrics.md); to data: "
       << (run.reference.empty() ? "none (only builtin:N prompts come with their scenes)" : run.reference)
       << "; to `ar`: `ar`'s images of this run.\n";
  return md.str();
}

}  // namespace speculum
