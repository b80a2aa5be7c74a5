// Trains an EAGLE-style drafter on a frozen target (research/seed-methods.md §1.4, §2.5): the target runs
// teacher-forced over corpus images (a share of rows under the null caption, so the drafter also learns
// the unconditional stream that CFG needs), and the drafter learns to predict the target's next feature
// from (token, feature): Smooth-L1 on features + ce_weight × soft cross-entropy against the target's
// distribution. The `lisa` objective (Locality-Informed Distillation, our reconstruction of §2.5) weights
// each position by its structured uncertainty and can smooth the soft target over the codebook.
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <string>

#include "models/drafter.h"
#include "models/transformer.h"
#include "speculum_tools.h"
#include "train/target_trainer.h"
#include "train/training_run.h"

namespace speculum {

// How well a drafter matches its target on teacher-forced images (conditional stream): the mean
// acceptance of standard speculative sampling Σ_v min(p, q), and how often the drafter's top-1 is the
// target's top-1.
DrafterFitReport drafter_fit(const Drafter& drafter, const TokenizedCorpus& corpus, int images);

// The geometry LISA uses: codes [V, d] (the tokenizer's normalised codebook) -> the locality radius ρ.
double codebook_locality_radius(const at::Tensor& codes, int neighbours);

// Fresh drafter weights: fc passes the feature through (so an untrained drafter predicts "the next
// feature is this one", a spatial prior), the layer's output projections start at zero.
TensorMap initial_drafter_weights(const GptConfig& target, std::uint64_t seed);

// Resumes from `<run_dir>/checkpoint`. Returns the final weights (also at checkpoint/weights.safetensors).
TensorMap train_drafter(const Transformer& target, const at::Tensor& codes, const DrafterTrainParams& params,
                        const std::string& run_dir, const TokenizedCorpus& corpus, const TokenizedCorpus& held_out,
                        const ProgressLine& progress, const std::atomic<bool>* stop = nullptr);

}  // namespace speculum
