#include "sampling/sampling_params.h"

#include <cmath>
#include <sstream>

#include "error.h"

namespace speculum {

std::string SamplingParams::to_string() const {
  std::ostringstream s;
  s << "cfg=" << cfg_scale << " temperature=" << temperature << " top_k=" << top_k << " top_p=" << top_p;
  return s.str();
}

void SamplingParams::validate() const {
  if (!std::isfinite(cfg_scale) || cfg_scale < 0 || cfg_scale > 100)
    throw Error("cfg must be in [0, 100], got " + std::to_string(cfg_scale));
  if (!std::isfinite(temperature) || temperature < 0 || temperature > 100)
    throw Error("temperature must be in [0, 100], got " + std::to_string(temperature));
  if (top_k < 0) throw Error("top-k must be >= 0 (0 turns it off), got " + std::to_string(top_k));
  if (!std::isfinite(top_p) || top_p <= 0 || top_p > 1)
    throw Error("top-p must be in (0, 1], got " + std::to_string(top_p));
}

}  // namespace speculum
