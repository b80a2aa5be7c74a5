// LANTERN's released EAGLE-style drafters for LlamaGen T2I (`llamagen_drafter`, `llamagen2_drafter`: config.json +
// pytorch_model.bin) installed as a converted T2I bundle's `eagle` drafter. LANTERN's conventions differ from
// Speculum-trained drafters, and the manifest records which one a drafter follows (convention "lantern"): its own
// token embedding, features taken after the target's final norm, a layer norm epsilon of its own, no final norm
// before the target's output head, the caption rows in its context, and the caption padding rows computed as
// LANTERN's LlamaGen port computes them (models/drafter.h).
#pragma once

#include "speculum.h"

namespace speculum {

struct LanternDrafterParams {
  std::string drafter_dir;  // config.json + pytorch_model.bin
  std::string bundle_dir;   // a converted LlamaGen T2I bundle; its manifest gains drafters.eagle
};

// Throws Error naming the file and field when the drafter does not fit the bundle (width, heads, vocabulary, FFN,
// grid, conditioning); nothing is changed then.
ConvertReport import_lantern_drafter(const LanternDrafterParams& params);

}  // namespace speculum
