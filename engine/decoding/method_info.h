// What the UI and CLI need to know about a decoding method without linking it: its name, a summary,
// and its parameters with defaults, ranges and help text (turned into widgets and flags).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace speculum {

struct ParamSpec {
  std::string name;   // the identifier requests, traces and --opt use
  std::string label;  // what a person reads in a form ("Jacobi window")
  std::string help;
  std::string unit;  // of the value, plural ("tokens", "rows"); empty for a pure number
  double default_value = 0;
  double min = 0;
  double max = 0;
  bool integer = false;
  // An enumeration: the value i (an integer from 0 to choices.size() - 1) means choices[i]. Empty: not one.
  std::vector<std::string> choices;
  bool toggle = false;  // a switch: 0 off, 1 on
  // The method's draft size (how many tokens a verification pass holds). A request leaves it at 0, "auto": the
  // size `speculum-cli tune` measured fastest for this bundle, weights, device and threads, else default_value.
  bool draft_size = false;
  // A draft size whose value changes which tokens a lossy method accepts: auto never goes past this (the default,
  // whose quality the studies measured); 0 = no limit. A tune still measures the larger sizes, for a user to pin.
  double auto_max = 0;
};

// A switch parameter (0 off, 1 on) and an enumeration (0 .. choices - 1), with their ranges filled in.
ParamSpec toggle_param(std::string name, std::string label, std::string help, bool on_by_default);
ParamSpec choice_param(std::string name, std::string label, std::string help, std::vector<std::string> choices,
                       int default_choice);

// How the value reads to a person: "on" / "off", the choice's name, or the number with its unit.
std::string param_value_text(const ParamSpec& spec, double value);
// The unit for `value`: plural, singular at 1 ("rounds", "round"); empty for a pure number.
std::string param_unit_text(const ParamSpec& spec, double value);
// What each value of an enumeration or a switch means, "0 = joint, 1 = staged"; empty for a number.
std::string param_choices_text(const ParamSpec& spec);

struct MethodInfo {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
};

// Method parameters by name; missing ones take their defaults (a draft size missing or 0: auto).
using MethodOptions = std::map<std::string, double>;
inline constexpr double kAutoDraftSize = 0;

}  // namespace speculum
