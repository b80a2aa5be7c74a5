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
};

struct MethodInfo {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
};

// Method parameters by name; missing ones take their defaults.
using MethodOptions = std::map<std::string, double>;

}  // namespace speculum
