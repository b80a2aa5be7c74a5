// GenerateParams and EngineParams: printing and the JSON form that PNGs and traces carry.
#include <sstream>

#include "io/json_fields.h"
#include "speculum.h"

namespace speculum {

std::string EngineParams::to_string() const {
  std::ostringstream s;
  s << "bundle=" << bundle_dir << " device=" << device << " threads=" << threads;
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
  const nlohmann::json j = {{"prompt", prompt},
                            {"class_id", class_id},
                            {"seed", seed},
                            {"method", method},
                            {"method_options", method_options},
                            {"cfg", sampling.cfg_scale},
                            {"temperature", sampling.temperature},
                            {"top_k", sampling.top_k},
                            {"top_p", sampling.top_p}};
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
      if (!value.is_number()) throw Error("generation parameters: method option '" + name + "' must be a number");
      p.method_options[name] = value.get<double>();
    }
  }
  p.sampling.cfg_scale = static_cast<float>(f.number("cfg", p.sampling.cfg_scale));
  p.sampling.temperature = static_cast<float>(f.number("temperature", p.sampling.temperature));
  p.sampling.top_k = f.integer("top_k", p.sampling.top_k);
  p.sampling.top_p = static_cast<float>(f.number("top_p", p.sampling.top_p));
  return p;
}

}  // namespace speculum
