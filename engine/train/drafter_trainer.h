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
#include "train/target_trainer.h"
#include "train/training_run.h"

namespace speculum {

enum class DrafterObjective { Eagle, Lisa };
DrafterObjective parse_drafter_objective(const std::string& name);  // "eagle" | "lisa"; throws naming both
const char* drafter_objective_name(DrafterObjective objective);

struct DrafterTrainParams {
  TrainSchedule schedule{2000, 50, 1e-3, 0.1};
  int batch = 16;
  double caption_dropout = 0.2;  // rows trained under the null caption (the CFG stream)
  double feature_noise = 0.2;    // uniform input-feature noise, as a fraction of the features' RMS (EAGLE)
  double ce_weight = 0.1;        // λ_p
  double grad_clip = 0.5;
  double weight_decay = 0.0;
  DrafterObjective objective = DrafterObjective::Eagle;
  // lisa: w_t = clamp(H_t · S_t / mean, w_min, w_max), S_t the mass within the codebook ball of radius ρ
  // around the target's mode; ρ is the mean distance of a code to its `locality_neighbours`-th nearest
  // code, and the soft target is smoothed with a Gaussian kernel of σ = ρ / 2.
  bool lisa_weights = true;
  bool lisa_smoothing = true;
  int locality_neighbours = 8;
  double weight_min = 0.2, weight_max = 5.0;
  int log_every = 10;
  int checkpoint_every = 100;
  int stop_at = 0;
  int held_out_images = 64;
  std::uint64_t seed = 0;
};

// How well a drafter matches its target on teacher-forced images (conditional stream): the mean
// acceptance of standard speculative sampling Σ_v min(p, q), and how often the drafter's top-1 is the
// target's top-1.
struct DrafterFit {
  double acceptance = 0;
  double top1 = 0;
};
DrafterFit drafter_fit(const Drafter& drafter, const TokenizedCorpus& corpus, int images);

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
