// What a method may use besides the target: the bundle's drafters, the codebook's geometry, LISA's
// calibrated bounds, SSD's spatial heads, and MuLo-SD's low-resolution drafter with the tokenizer it up-samples through. The engine fills it from the bundle; make_method says clearly what is missing.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "decoding/codebook_geometry.h"
#include "io/bundle.h"
#include "models/drafter.h"
#include "models/spatial_heads.h"
#include "models/transformer.h"
#include "models/vq_model.h"

namespace speculum {

struct MethodResources {
  std::string bundle;                              // for error messages
  std::map<std::string, const Drafter*> drafters;  // by manifest name: "eagle", "lisa"
  const CodebookGeometry* geometry = nullptr;
  std::optional<SoftVerificationBounds> soft_bounds;
  const SpatialHeads* ssd_heads = nullptr;
  const Transformer* low_res_drafter = nullptr;
  const VqModel* tokenizer = nullptr;
  bool class_conditioned = false;  // the train commands build corpora of captions: they serve text bundles only
  bool t5_conditioned = false;     // ... of the shapes grammar's words: not T5 bundles (LlamaGen T2I) either
};

// How to get a missing part: `command` for text-conditioned bundles; for class- or T5-conditioned ones (converted
// LlamaGen models) the honest answer that Speculum cannot train it yet.
inline std::string how_to_train(const MethodResources& r, const std::string& command) {
  if (r.class_conditioned)
    return "Speculum trains this part for text-conditioned bundles only; class-conditioned training, as a converted "
           "LlamaGen model would need, is not implemented yet (docs/real-models.md)";
  if (r.t5_conditioned)
    return "Speculum's trainers read its shapes corpus and cannot train this part for a T5-conditioned bundle yet "
           "(docs/real-models.md)";
  return "train it: " + command;
}

}  // namespace speculum
