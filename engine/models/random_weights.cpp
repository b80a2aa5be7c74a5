#include "models/random_weights.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

namespace speculum {
namespace {

bool is_norm_parameter(const std::string& name) {
  const auto dot = name.rfind('.');
  const std::string module = name.substr(0, dot);
  const std::string last = module.substr(module.rfind('.') + 1);
  return last.find("norm") != std::string::npos;
}

}  // namespace

TensorMap random_weights(const std::vector<TensorSpec>& specs, std::uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  TensorMap out;
  for (const auto& spec : specs) {
    const auto& name = spec.name;
    if (is_norm_parameter(name)) {
      out[name] = name.ends_with(".bias") ? at::zeros(spec.shape) : at::ones(spec.shape);
    } else if (name.ends_with(".bias")) {
      out[name] = at::zeros(spec.shape);
    } else {
      const bool table = name.find("embedding") != std::string::npos;
      std::int64_t fan_in = 1;
      for (std::size_t i = 1; i < spec.shape.size(); ++i) fan_in *= spec.shape[i];
      const double std = table ? 1.0 : 1.0 / std::sqrt(static_cast<double>(fan_in));
      out[name] = at::normal(0.0, std, spec.shape, gen);
    }
  }
  return out;
}

}  // namespace speculum
