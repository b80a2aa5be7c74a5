// Offline calibration of LISA's soft-verification bounds (our reconstruction after ARC-Decode's
// calibration, research/seed-methods.md §1.6). At sampled positions of the target's own images, the
// target's top-2 token t_d stands in for a draft that its top-1 t_m would replace; the downstream shift
// of that substitution is the Jensen-Shannon divergence of the next position's distributions. The scales
// alpha and beta make alpha·Δ² and beta·g upper estimates of the shift for (1 - delta) of the samples, and
// the bounds are (1 - delta) quantiles of the estimated shift and of Δ.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "io/bundle.h"
#include "models/transformer.h"
#include "sampling/sampling_params.h"
#include "train/train_params.h"

namespace speculum {

// `images` [B, N] token grids with the condition each was drawn under (a prefix with the CFG rows `sampling` needs:
// row 0 conditional, row 1 the null condition); `whitened` [V, d] codes.
SoftVerificationBounds calibrate_soft_verification(const Transformer& target, const at::Tensor& whitened,
                                                   const at::Tensor& images, const std::vector<ConditionPrefix>& conditions,
                                                   const SamplingParams& sampling, const SoftCalibrationParams& params);

}  // namespace speculum
