// What the UI and CLI need to know about a decoding method without linking it: its name, a summary,
// and its parameters with defaults, ranges and help text (turned into widgets and flags).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace speculum {

struct ParamSpec {
  std::string name;
  std::string help;
  double default_value = 0;
  double min = 0;
  double max = 0;
  bool integer = false;
  // The method's draft size (how many tokens a verification pass holds). A request leaves it at 0, "auto": the
  // size `speculum-cli tune` measured fastest for this bundle, weights, device and threads, else default_value.
  bool draft_size = false;
  // A draft size whose value changes which tokens a lossy method accepts: auto never goes past this (the default,
  // whose quality the studies measured); 0 = no limit. A tune still measures the larger sizes, for a user to pin.
  double auto_max = 0;
};

struct MethodInfo {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
};

// Method parameters by name; missing ones take their defaults (a draft size missing or 0: auto).
using MethodOptions = std::map<std::string, double>;
inline constexpr double kAutoDraftSize = 0;

}  // namespace speculum
