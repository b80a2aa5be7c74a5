#include "io/sampling_fields.h"

#include <nlohmann/json.hpp>

#include "io/json_fields.h"

namespace speculum {

SamplingParams read_sampling_fields(const JsonFields& fields, const SamplingParams& fallback) {
  SamplingParams s = fallback;
  s.cfg_scale = static_cast<float>(fields.number("cfg", s.cfg_scale));
  s.temperature = static_cast<float>(fields.number("temperature", s.temperature));
  s.top_k = fields.integer("top_k", s.top_k);
  s.top_p = static_cast<float>(fields.number("top_p", s.top_p));
  return s;
}

void write_sampling_fields(const SamplingParams& sampling, nlohmann::json& object) {
  object["cfg"] = sampling.cfg_scale;
  object["temperature"] = sampling.temperature;
  object["top_k"] = sampling.top_k;
  object["top_p"] = sampling.top_p;
}

}  // namespace speculum
