// GenerateParams and EngineParams: printing and the JSON form that PNGs and traces carry.
#include <algorithm>
#include <sstream>

#include "io/json_fields.h"
#include "io/limits.h"
#include "io/sampling_fields.h"
#include "speculum.h"

namespace speculum {

std::string EngineParams::to_string() const {
  std::ostringstream s;
  s << "bundle=" << bundle_dir << " device=" << device << " threads=" << threads;
  if (!t5_folder.empty()) s << " t5=" << t5_folder;
  if (!weights.empty()) s << " weights=" << weights;
  return s.str();
}

std::string GenerateParams::to_string() const {
  std::ostringstream s;
  s << "method=" << method << " seed=" << seed;
  if (!prompt.empty()) s << " prompt=\"" << prompt << "\"";
  if (class_id >= 0) s << " class=" << class_id;
  s << " " << sampling.to_string();
  for (const auto& [name, value] : method_options) s << " " << name << "=" << value;
  return s.str();
}

std::string GenerateParams::to_json() const {
  nlohmann::json j = {{"prompt", prompt},
                      {"class_id", class_id},
                      {"seed", seed},
                      {"method", method},
                      {"method_options", method_options}};
  write_sampling_fields(sampling, j);
  return j.dump();
}

namespace {

// A method or option name: what a user could have typed (printable, one line, at most kMaxLabelChars).
void check_label(const std::string& label, const char* what) {
  const bool printable = std::all_of(label.begin(), label.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; });
  if (label.empty() || label.size() > limits::kMaxLabelChars || !printable)
    throw Error(std::string("generation parameters: the ") + what + " '" + short_text(label) + "' is empty, longer than " +
                std::to_string(limits::kMaxLabelChars) + " characters or not printable");
}

}  // namespace

GenerateParams GenerateParams::from_json(const std::string& json) {
  const nlohmann::json doc = parse_untrusted_json(json, "generation parameters", 4);
  const JsonFields f(doc, "generation parameters");
  GenerateParams p;
  p.prompt = f.has("prompt") ? f.string("prompt") : "";
  p.class_id = f.integer("class_id", -1);
  if (f.has("seed")) {
    if (!doc["seed"].is_number_unsigned()) throw Error("generation parameters: field 'seed' must be a non-negative integer");
    p.seed = doc["seed"].get<std::uint64_t>();
  }
  if (p.class_id < -1) throw Error("generation parameters: field 'class_id' must be -1 (none) or a class id >= 0");
  p.method = f.has("method") ? f.string("method") : "ar";
  check_label(p.method, "method");
  if (f.has("method_options")) {
    if (!doc["method_options"].is_object()) throw Error("generation parameters: field 'method_options' must be an object");
    for (const auto& [name, value] : doc["method_options"].items()) {
      check_label(name, "method option name");
      if (value == "auto") {
        p.method_options[name] = kAutoDraftSize;
        continue;
      }
      if (!value.is_number()) throw Error("generation parameters: method option '" + name + "' must be a number (or \"auto\", for a draft size)");
      p.method_options[name] = value.get<double>();
    }
  }
  p.sampling = read_sampling_fields(f, p.sampling);
  try {
    p.sampling.validate();
  } catch (const Error& e) {
    throw Error(std::string("generation parameters: ") + e.what());
  }
  return p;
}

}  // namespace speculum
