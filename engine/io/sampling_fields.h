// SamplingParams as JSON fields ("cfg", "temperature", "top_k", "top_p"): the same keys in a run's
// parameters (PNG text chunks, traces) and in a bundle manifest's recommended "sampling".
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "sampling/sampling_params.h"

namespace speculum {

class JsonFields;

// Fields that are absent keep their value in `fallback`; wrong types throw naming the field.
SamplingParams read_sampling_fields(const JsonFields& fields, const SamplingParams& fallback);
void write_sampling_fields(const SamplingParams& sampling, nlohmann::json& object);

}  // namespace speculum
