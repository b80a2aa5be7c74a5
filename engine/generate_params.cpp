// GenerateParams and EngineParams: printing and the JSON form that PNGs and traces carry.
#include <sstream>

#include "io/json_fields.h"
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
  p.method = f.has("method") ? f.string("method") : "ar";
  if (f.has("method_options")) {
    for (const auto& [name, value] : doc["method_options"].items()) {
      if (value == "auto") {
        p.method_options[name] = kAutoDraftSize;
        continue;
      }
      if (!value.is_number()) throw Error("generation parameters: method option '" + name + "' must be a number (or \"auto\", for a draft size)");
      p.method_options[name] = value.get<double>();
    }
  }
  p.sampling = read_sampling_fields(f, p.sampling);
  return p;
}

}  // namespace speculum
