// tune_draft_sizes: each method's draft size measured on this engine, beside `ar`, for `auto` to resolve to.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <sstream>

#include "io/draft_size_file.h"
#include "trace/bench_records.h"
#include "speculum.h"

namespace speculum {
namespace {

struct Trial {
  std::string method;
  const ParamSpec* param = nullptr;  // null for ar
  int size = 0;
  std::vector<double> ms, tokens_per_pass;
  std::vector<std::vector<int>> images;  // each image's tokens
};

std::vector<Trial> trials_for(const ModelInfo& info, const TuneParams& params) {
  std::vector<std::string> methods = params.methods;
  if (methods.empty())
    for (const std::string& m : info.methods)
      if (draft_size_param(m)) methods.push_back(m);
  std::vector<Trial> trials = {{"ar", nullptr, 0, {}, {}}};
  for (const std::string& method : methods) {
    if (std::find(info.methods.begin(), info.methods.end(), method) == info.methods.end()) {
      std::string runs;
      for (const auto& m : info.methods) runs += (runs.empty() ? "" : ", ") + m;
      throw Error("tune: bundle '" + info.name + "' cannot run method '" + method + "' (it runs: " + runs + ")");
    }
    const ParamSpec* param = draft_size_param(method);
    if (!param) throw Error("tune: method '" + method + "' has no draft size to tune");
    for (const int size : draft_size_candidates(*param)) trials.push_back({method, param, size, {}, {}});
  }
  return trials;
}

GenerateParams image_request(const ModelInfo& info, const TuneParams& params, int image) {
  GenerateParams p;
  p.sampling = info.sampling;
  p.seed = params.seed + static_cast<std::uint64_t>(image);
  if (!info.example_prompts.empty()) p.prompt = info.example_prompts[image % info.example_prompts.size()];
  else if (info.free_text) p.prompt = "a photo of a dog on the grass";
  else if (info.text_conditioned) p.prompt = info.text_vocab.at(image % info.text_vocab.size());
  else p.class_id = image % static_cast<int>(std::max<std::size_t>(1, info.classes.size()));
  return p;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

DraftSizeTable tune_draft_sizes(Engine& engine, const TuneParams& params, const Callbacks& cb, const std::atomic<bool>* cancel) {
  constexpr int kMaxImages = 1000;
  if (params.images < 1 || params.images > kMaxImages)
    throw Error("tune: images = " + std::to_string(params.images) + " is outside [1, " + std::to_string(kMaxImages) + "]");
  const ModelInfo& info = engine.info();
  std::vector<Trial> trials = trials_for(info, params);
  int runs = params.images * static_cast<int>(trials.size());
  int done = 0;
  // Image by image, every size in turn: the machine's speed drifts over minutes, and each size then meets it alike.
  for (int image = 0; image < params.images; ++image) {
    for (auto trial = trials.begin(); trial != trials.end();) {
      if (cancel && cancel->load()) throw Error("tune cancelled");
      GenerateParams request = image_request(info, params, image);
      request.method = trial->method;
      if (trial->param) request.method_options[trial->param->name] = trial->size;
      try {
        const GenerateResult result = engine.generate(request, {cb.log, {}, {}, {}}, cancel);
        if (result.cancelled) throw Error("tune cancelled");
        trial->ms.push_back(result.metrics.wall_ms);
        trial->tokens_per_pass.push_back(result.metrics.mean_accepted_length());
        trial->images.push_back(result.tokens);
        ++trial;
      } catch (const Error& e) {
        if (image > 0 || !trial->param) throw;
        // a size the bundle cannot run (more SSD heads than it has, ...) is refused before anything runs
        if (cb.log) cb.log(LogLevel::Info, "tune: " + trial->method + " " + trial->param->name + " " + std::to_string(trial->size) + " skipped: " + e.what());
        trial = trials.erase(trial);
      }
      if (cb.progress) cb.progress(++done, runs);
    }
    if (image == 0) runs = done + (params.images - 1) * static_cast<int>(trials.size());  // less the skipped sizes
  }

  // A size that drew every image exactly as a smaller one did ran the same passes (MuLo-SD's rows per cycle past the
  // grid's rows, ...): its other time is noise, so only the smaller one stays.
  std::vector<Trial> distinct;
  for (Trial& t : trials)
    if (std::none_of(distinct.begin(), distinct.end(), [&](const Trial& smaller) { return smaller.method == t.method && smaller.images == t.images; }))
      distinct.push_back(std::move(t));
  trials = std::move(distinct);
  DraftSizeTable table;
  table.key = info.draft_size_key;
  table.bundle_name = info.name;
  table.measured_at = utc_now();
  table.images = params.images;
  table.ar_ms_per_image = spread_of(trials.front().ms).median;
  for (const Trial& t : trials) {
    if (!t.param) continue;
    if (table.methods.empty() || table.methods.back().method != t.method) table.methods.push_back({t.method, t.param->name, 0, {}});
    MethodTuning& m = table.methods.back();
    m.trials.push_back({t.size, spread_of(t.ms).median, spread_of(t.tokens_per_pass).median});
    if (auto_may_choose(*t.param, t.size) && (m.chosen == 0 || m.trials.back().ms_per_image < m.best().ms_per_image)) m.chosen = t.size;
  }
  std::erase_if(table.methods, [](const MethodTuning& m) { return m.chosen == 0; });  // no size auto may take could run
  for (MethodTuning& m : table.methods) {
    if (cb.log) {
      std::ostringstream line;
      line << "tune: " << m.method << " " << m.param << " " << m.chosen << ": " << m.best().ms_per_image << " ms/image, "
           << table.speedup(m) << "x ar";
      cb.log(LogLevel::Info, line.str());
    }
  }
  const int context = info.grid_rows * info.grid_cols / 2;
  std::vector<int> sizes;
  for (int n = 1; n <= 32 && n <= info.grid_rows * info.grid_cols - context; n *= 2) sizes.push_back(n);
  table.cost_curve = engine.measure_forward_cost(sizes, context, 5);
  return table;
}

std::string save_draft_sizes(const std::string& file, const DraftSizeTable& table) { return save_draft_size_table(file, table); }

}  // namespace speculum
