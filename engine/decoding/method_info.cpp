#include "decoding/method_info.h"

#include <cmath>
#include <sstream>

namespace speculum {

ParamSpec toggle_param(std::string name, std::string label, std::string help, bool on_by_default) {
  return {.name = std::move(name), .label = std::move(label), .help = std::move(help), .default_value = on_by_default ? 1.0 : 0.0,
          .min = 0, .max = 1, .integer = true, .toggle = true};
}

ParamSpec choice_param(std::string name, std::string label, std::string help, std::vector<std::string> choices,
                       int default_choice) {
  const double last = static_cast<double>(choices.size()) - 1;
  return {.name = std::move(name), .label = std::move(label), .help = std::move(help), .default_value = double(default_choice),
          .min = 0, .max = last, .integer = true, .choices = std::move(choices)};
}

std::string param_value_text(const ParamSpec& spec, double value) {
  if (spec.toggle) return value != 0 ? "on" : "off";
  const double index = std::round(value);
  if (!spec.choices.empty() && index == value && index >= 0 && index < static_cast<double>(spec.choices.size()))
    return spec.choices[static_cast<std::size_t>(index)];
  std::ostringstream out;
  out << value;
  if (!spec.unit.empty()) out << " " << param_unit_text(spec, value);
  return out.str();
}

std::string param_unit_text(const ParamSpec& spec, double value) {
  return value == 1 && spec.unit.ends_with("s") ? spec.unit.substr(0, spec.unit.size() - 1) : spec.unit;
}

std::string param_choices_text(const ParamSpec& spec) {
  if (!spec.toggle && spec.choices.empty()) return "";
  std::string out;
  for (int v = int(spec.min); v <= int(spec.max); ++v) out += (out.empty() ? "" : ", ") + std::to_string(v) + " = " + param_value_text(spec, v);
  return out;
}

}  // namespace speculum
