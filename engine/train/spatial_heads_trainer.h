// Trains SSD's spatial heads on a frozen target by self-distillation (research/seed-methods.md §3.3): the
// target runs teacher-forced over corpus images (a share under the null caption, for the CFG stream), and
// each head learns to predict the target's feature δ cells to the right or δ rows below from a cell's
// feature and token: Smooth-L1 on features + ce_weight × soft cross-entropy against the target's
// distribution there, averaged over the heads.
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <string>
#include <vector>

#include "models/spatial_heads.h"
#include "train/target_trainer.h"
#include "train/training_run.h"

namespace speculum {

// Teacher-forced acceptance Σ_v min(p, q) of each head on the corpus's first `images` images
// (conditional stream): horizontal heads first (δ = 1..), then vertical.
std::vector<double> spatial_heads_fit(const SpatialHeads& heads, const TokenizedCorpus& corpus, int images);

// Fresh heads: W₀ passes the feature half through (ĥ starts as "the same feature as here"), the SwiGLU
// output projection starts at zero.
TensorMap initial_spatial_heads_weights(const GptConfig& target, int horizontal, int vertical, std::uint64_t seed);

// Resumes from `<run_dir>/checkpoint`. Returns the final weights.
TensorMap train_spatial_heads(const Transformer& target, const SpatialHeadsTrainParams& params, const std::string& run_dir,
                              const TokenizedCorpus& corpus, const TokenizedCorpus& held_out,
                              const ProgressLine& progress, const std::atomic<bool>* stop = nullptr);

}  // namespace speculum
