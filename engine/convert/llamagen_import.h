// LlamaGen's class-conditional checkpoints (the GPT `c2i_*.pt` and the VQ `vq_ds16_c2i.pt`, as torch.save
// wrote them) into a Speculum bundle. Every size comes from the tensors' shapes; what shapes cannot say
// (the head count of a non-standard width, the image size) comes from LlamaGen's published configurations,
// the file name, or an override. Tensor names are LlamaGen's own, so weights are copied byte for byte in
// the dtype they were stored in (F32, F16, BF16; the engine computes in F32).
#pragma once

#include "speculum.h"

namespace speculum {

// The override keys `--set` accepts, with what each sets.
const std::vector<std::pair<std::string, std::string>>& llamagen_override_keys();

}  // namespace speculum
