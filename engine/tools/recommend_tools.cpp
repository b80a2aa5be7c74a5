// The method options a bundle recommends: written into its manifest, where Engine::load reads them.
#include "decoding/method.h"
#include "io/bundle.h"
#include "speculum_tools.h"

namespace speculum {

std::map<std::string, MethodOptions> recommend_method_options(const std::string& bundle_dir, const std::string& method,
                                                              const MethodOptions& options) {
  check_recommended_method_options(method, options);
  BundleManifest m = read_manifest(bundle_dir);
  if (options.empty())
    m.method_options.erase(method);
  else
    m.method_options[method] = options;
  write_manifest(m, m.dir);
  return m.method_options;
}

}  // namespace speculum
