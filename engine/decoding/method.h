// The one interface every decoding algorithm implements (DESIGN.md §3). A method runs steps of at
// most one target forward each on a DecodeSession until the grid is complete or cancel is requested.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "decoding/decode_session.h"
#include "decoding/method_info.h"
#include "decoding/method_resources.h"

namespace speculum {

class Method {
 public:
  virtual ~Method() = default;
  // KV slots beyond prefix + grid that the method's drafts may occupy at once.
  virtual int extra_cache_slots() const { return 0; }
  virtual void run(DecodeSession& session) = 0;
};

const std::vector<MethodInfo>& method_catalog();
// The value of parameter `name` in `options`, else its ParamSpec default.
double method_option(const MethodOptions& options, const MethodInfo& info, const std::string& name);
// Validates `options` against the method's ParamSpecs (unknown names and out-of-range values are errors)
// and that `resources` hold what the method needs (its drafter, calibrated bounds), naming what is missing.
// Throws Error for an unknown method (listing the known ones), an unknown option or one outside its range.
void check_method_options(const std::string& method, const MethodOptions& options);
// The same for options a bundle recommends (manifest "method_options"), which may not fix a draft size: that depends on
// the machine, not the model.
void check_recommended_method_options(const std::string& method, const MethodOptions& options);
std::unique_ptr<Method> make_method(const std::string& name, const MethodOptions& options, const MethodResources& resources);

}  // namespace speculum
