// What a method may use besides the target: the bundle's drafters, the codebook's geometry, LISA's
// calibrated bounds and SSD's spatial heads. The engine fills it from the bundle; make_method says clearly what is missing.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "decoding/codebook_geometry.h"
#include "io/bundle.h"
#include "models/drafter.h"
#include "models/spatial_heads.h"

namespace speculum {

struct MethodResources {
  std::string bundle;                              // for error messages
  std::map<std::string, const Drafter*> drafters;  // by manifest name: "eagle", "lisa"
  const CodebookGeometry* geometry = nullptr;
  std::optional<SoftVerificationBounds> soft_bounds;
  const SpatialHeads* ssd_heads = nullptr;
};

}  // namespace speculum
