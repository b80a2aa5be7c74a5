// Random initial weights for any architecture described by TensorSpecs: normalisation scales 1,
// biases 0, everything else N(0, 1/fan_in) (embeddings and codebooks N(0, 1)). Seeded, so a random
// bundle is the same on every machine.
#pragma once

#include <cstdint>
#include <vector>

#include "models/model_config.h"
#include "models/tensor_io.h"

namespace speculum {

TensorMap random_weights(const std::vector<TensorSpec>& specs, std::uint64_t seed);

}  // namespace speculum
