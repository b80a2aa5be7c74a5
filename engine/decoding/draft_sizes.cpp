#include "decoding/draft_sizes.h"

#include <algorithm>
#include <cmath>

#include "decoding/method.h"
#include "error.h"

namespace speculum {

const DraftSizeTrial& MethodTuning::best() const {
  for (const auto& t : trials)
    if (t.size == chosen) return t;
  throw Error("draft sizes of '" + method + "': the chosen " + param + " " + std::to_string(chosen) + " is not among its trials");
}

const DraftSizeTrial& MethodTuning::fastest() const {
  if (trials.empty()) throw Error("draft sizes of '" + method + "': no trials");
  return *std::min_element(trials.begin(), trials.end(), [](const auto& a, const auto& b) { return a.ms_per_image < b.ms_per_image; });
}

const ParamSpec* draft_size_param(const std::string& method) {
  for (const MethodInfo& m : method_catalog())
    if (m.name == method)
      for (const ParamSpec& p : m.params)
        if (p.draft_size) return &p;
  return nullptr;
}

bool auto_may_choose(const ParamSpec& spec, int size) { return spec.auto_max <= 0 || size <= spec.auto_max; }

std::string DraftSizeKey::to_string() const {
  return weights + " weights on " + device + " with " + std::to_string(threads) + " thread(s), " + machine;
}

const MethodTuning* DraftSizeTable::find(const std::string& method) const {
  for (const auto& m : methods)
    if (m.method == method) return &m;
  return nullptr;
}

std::vector<int> draft_size_candidates(const ParamSpec& spec) {
  constexpr int kLargestTried = 32;  // past this a pass costs many 1-token steps on every device we measured
  std::vector<int> sizes = {static_cast<int>(spec.min), static_cast<int>(std::lround(spec.default_value))};
  for (int size = 2; size <= kLargestTried; size *= 2)
    if (size > spec.min) sizes.push_back(size);
  std::erase_if(sizes, [&](int s) { return s < spec.min || s > spec.max; });
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

MethodOptions resolve_draft_sizes(const MethodInfo& method, MethodOptions options, const DraftSizeTable* table) {
  const MethodTuning* tuned = table ? table->find(method.name) : nullptr;
  for (const ParamSpec& spec : method.params) {
    if (!spec.draft_size) continue;
    const auto given = options.find(spec.name);
    if (given != options.end() && given->second != kAutoDraftSize) continue;
    options[spec.name] = tuned && tuned->param == spec.name ? tuned->chosen : spec.default_value;
  }
  return options;
}

}  // namespace speculum
