#include <cmath>

#include "decoding/ar_method.h"
#include "decoding/mulo_method.h"
#include "decoding/sjd_method.h"
#include "decoding/ssd_method.h"
#include "decoding/tree_method.h"
#include "decoding/method.h"
#include "error.h"
#include "io/json_fields.h"

namespace speculum {

const std::vector<MethodInfo>& method_catalog() {
  static const std::vector<MethodInfo> catalog = {ar_method_info(), eagle_method_info(), lantern_method_info(),
                                                  lisa_method_info(), sjd_method_info(), ssd_method_info(),
                                                  mulo_method_info()};
  return catalog;
}

namespace {

void check_options(const MethodInfo& info, const MethodOptions& options) {
  for (const auto& [name, value] : options) {
    const ParamSpec* spec = nullptr;
    for (const auto& p : info.params)
      if (p.name == name) spec = &p;
    if (!spec) {
      std::string allowed;
      for (const auto& p : info.params) allowed += (allowed.empty() ? "" : ", ") + p.name;
      throw Error("method '" + info.name + "' has no parameter '" + name + "' (allowed: " +
                  (allowed.empty() ? "none" : allowed) + ")");
    }
    if (spec->draft_size && value == kAutoDraftSize) continue;
    if (!(value >= spec->min && value <= spec->max) || (spec->integer && value != std::floor(value))) {
      const std::string choices = param_choices_text(*spec);
      throw Error("method '" + info.name + "': " + name + " = " + std::to_string(value) + " is outside [" +
                  std::to_string(spec->min) + ", " + std::to_string(spec->max) + "]" +
                  (spec->integer ? " or not an integer" : "") + (spec->draft_size ? " (0 = auto)" : "") +
                  (choices.empty() ? "" : " (" + choices + ")"));
    }
  }
}

// An auto draft size the engine did not resolve (no tuning) is the parameter's default: as if not given.
MethodOptions without_auto_sizes(const MethodInfo& info, MethodOptions options) {
  for (const auto& p : info.params)
    if (p.draft_size && options.count(p.name) && options.at(p.name) == kAutoDraftSize) options.erase(p.name);
  return options;
}

[[noreturn]] void throw_unknown_method(const std::string& name) {
  std::string allowed;
  for (const auto& info : method_catalog()) allowed += (allowed.empty() ? "" : ", ") + info.name;
  throw Error("unknown method '" + short_text(name) + "' (available: " + allowed + ")");
}

}  // namespace

double method_option(const MethodOptions& options, const MethodInfo& info, const std::string& name) {
  if (const auto it = options.find(name); it != options.end()) return it->second;
  for (const auto& p : info.params)
    if (p.name == name) return p.default_value;
  throw Error("method bug: '" + info.name + "' has no parameter '" + name + "'");
}

std::unique_ptr<Method> make_method(const std::string& name, const MethodOptions& requested, const MethodResources& resources) {
  for (const auto& info : method_catalog()) {
    if (info.name != name) continue;
    check_options(info, requested);
    const MethodOptions options = without_auto_sizes(info, requested);
    if (name == "ar") return std::make_unique<ArMethod>();
    if (name == "sjd")
      return std::make_unique<SjdMethod>(static_cast<int>(method_option(options, info, "window")),
                                         method_option(options, info, "init") != 0);
    if (name == "ssd") return make_ssd_method(options, resources);
    if (name == "mulo") return make_mulo_method(options, resources);
    return make_tree_method(name, options, resources);
  }
  throw_unknown_method(name);
}

void check_method_options(const std::string& method, const MethodOptions& options) {
  for (const auto& info : method_catalog())
    if (info.name == method) return check_options(info, options);
  throw_unknown_method(method);
}

void check_recommended_method_options(const std::string& method, const MethodOptions& options) {
  check_method_options(method, options);
  for (const auto& info : method_catalog())
    for (const auto& spec : info.params)
      if (info.name == method && spec.draft_size && options.count(spec.name))
        throw Error("method '" + method + "': " + spec.name + " is a draft size, which depends on the machine, not the "
                    "model: leave it to auto (speculum-cli tune measures it)");
}

}  // namespace speculum
