// Draft sizes measured per machine: what `auto` resolves to. A verification pass of n tokens costs more than a
// 1-token step by the device's cost curve, and a method commits more tokens per pass the more it drafts, by its
// acceptance; the fastest size is where the two meet, and it moves with the model, the weights' format, the device
// and the thread count. `speculum-cli tune` measures it (wall-clock per image at each size, beside `ar`) and keeps
// one table per such key in a file the front ends read at load.
#pragma once

#include <string>
#include <vector>

#include "decoding/method_info.h"

namespace speculum {

// One target forward of `new_tokens` tokens (with the bundle's CFG rows): median milliseconds.
struct ForwardCost {
  int new_tokens = 0;
  double ms = 0;
};

struct DraftSizeTrial {
  int size = 0;
  double ms_per_image = 0;    // median over the tune's images
  double tokens_per_pass = 0;  // tokens committed per target forward (tau)
};

struct MethodTuning {
  std::string method;
  std::string param;  // the method's draft-size parameter
  int chosen = 0;     // the size with the least ms_per_image
  std::vector<DraftSizeTrial> trials;  // sizes ascending; a size the bundle cannot run is left out
  const DraftSizeTrial& best() const;     // the chosen size's trial
  const DraftSizeTrial& fastest() const;  // differs from best() where auto may not take the fastest (ParamSpec::auto_max)
};

// What a table holds measurements for: a request on another key keeps the parameters' defaults.
struct DraftSizeKey {
  std::string bundle;   // bundle_fingerprint(): the manifest and the weights' bytes
  std::string weights;  // "f32", "f16", "bf16", "q8"
  std::string device;   // "cpu", "cuda:0"
  int threads = 0;
  std::string machine;  // CPU model and logical cores
  bool operator==(const DraftSizeKey&) const = default;
  std::string to_string() const;
};

struct DraftSizeTable {
  DraftSizeKey key;
  std::string bundle_name;
  std::string measured_at;  // UTC, ISO 8601
  int images = 0;           // timed images per size (prompts and seeds fixed)
  double ar_ms_per_image = 0;
  std::vector<ForwardCost> cost_curve;
  std::vector<MethodTuning> methods;

  const MethodTuning* find(const std::string& method) const;  // nullptr when the method was not tuned
  double speedup(const DraftSizeTrial& t) const { return t.ms_per_image > 0 ? ar_ms_per_image / t.ms_per_image : 0; }
  double speedup(const MethodTuning& m) const { return speedup(m.best()); }
};

// The draft sizes a tune tries for a parameter: its minimum, the powers of two above it up to 32 and its default,
// within its range, ascending.
std::vector<int> draft_size_candidates(const ParamSpec& spec);
// The method's draft-size parameter; nullptr for an unknown method or one without (ar).
const ParamSpec* draft_size_param(const std::string& method);
// Whether auto may resolve to `size` (ParamSpec::auto_max).
bool auto_may_choose(const ParamSpec& spec, int size);

// `options` with every auto draft size of the method (missing or 0) made concrete: the table's measured fastest
// size when `table` tuned the method, else the parameter's default. Sizes the request gives stay.
MethodOptions resolve_draft_sizes(const MethodInfo& method, MethodOptions options, const DraftSizeTable* table);

}  // namespace speculum
