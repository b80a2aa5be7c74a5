// What each trainer and LISA's calibration take, without LibTorch: the parameters a front end fills in
// (speculum_tools.h) and the trainers read. Defaults are the recipes the shipped default model was trained with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace speculum {

struct TrainSchedule {
  int steps = 5000;
  int warmup = 200;
  double peak_lr = 1e-3;
  double final_lr_fraction = 0.1;
  double lr_at(int step) const;  // linear warm-up, then cosine down to final_lr_fraction * peak
  std::string to_string() const;
};

struct TargetTrainParams {
  TrainSchedule schedule{20000, 300, 1e-3, 0.05};
  int batch = 32;
  double caption_dropout = 0.1;
  double weight_decay = 0.01;
  double grad_clip = 1.0;
  int log_every = 10;
  int checkpoint_every = 100;
  int stop_at = 0;  // stop (with a checkpoint) before this step, keeping the schedule's horizon; 0 = run to its end
  // A new run starts from this run folder's checkpoint (EMA weights if present), or a bundle's target, for every
  // tensor both models have; the rest (say, a text encoder the old model lacked) starts as the identity. Empty: random.
  std::string init_from;
  // The tensors an init_from source lacks (blocks grown onto a shallower model, a new caption encoder) train at this
  // multiple of the learning rate, so they can leave the identity within a continuation's schedule while the learned
  // ones keep its gentle rate; a hotter rate for the whole model undoes what it learned. 1: one rate for all.
  double grown_lr_scale = 1;
  // The loss on a token weighs 1 + object_weight x its cell's object share (the corpus's object_share), so that the
  // few tokens a caption's shape, count and relation words decide are not drowned by background; 0: the plain mean.
  double object_weight = 0;
  // The loss on each object-top token (object_tops: the cells where drawing commits to an object's colour and shape,
  // the second object's onset among them, where relation prompts fail by copying the first) also weighs + tops_weight;
  // unlike the caption contrast, whose margin over a foil saturates, this keeps the full likelihood gradient there.
  // Needs a corpus with object shares; 0: off.
  double tops_weight = 0;
  // Weight of the caption-reading loss: a linear reader on the mean hidden state of each image's first grid row that
  // holds an object (a quarter of a cell or more) predicts which vocabulary words its caption has (a bag of words,
  // binary cross-entropy summed over the vocabulary), so the positions that decide the first object's shape must
  // carry the caption's words. The reader is trained with the model and kept in the run's checkpoint, not in the
  // model. 0: off. Images without an object (emoji) or trained under the null caption take no part.
  double caption_reading = 0;
  // Weight of the caption-contrast loss: each image trained under its caption is also scored under a foil, its caption
  // with one word swapped for another of its group (foil_groups: a shape, a count, a side, a size), and the loss is
  // -log σ(Δ), Δ = log p(image | caption) - log p(image | foil) summed over the image's tokens — the model as a
  // classifier between the two captions. Its gradient acts only where the swapped word changes a prediction (the
  // edges that make a circle a square), which the mean next-token loss spreads thin over 256 tokens. One more forward
  // and backward pass per step. 0: off. Images without a swappable word (emoji) take no part.
  double caption_contrast = 0;
  // Which tokens Δ sums over: every token of the image, or only the object tops — each object cell whose cell above
  // has no object, and the cell below it (the corpus's object shares): where generation commits to a shape and a
  // count, the rest of an object following from its first rows.
  bool contrast_object_tops = false;
  std::vector<std::vector<std::string>> foil_groups;  // words by group; train_target_run fills the shapes grammar's
  // The share of foils that exchange two different words of one exchange group where the caption has such a pair (a
  // relation's two colours or two shapes): the same words bound to the other object, which no one-word swap asks.
  double contrast_exchange = 0;
  // The share of foils that copy one of those two words onto the other (a relation whose two objects share a colour
  // or a shape): the caption of the image the model draws when the second object copies the first, the leak that
  // fails most relation prompts (docs/model-card.md). contrast_exchange + contrast_copy ≤ 1.
  double contrast_copy = 0;
  std::vector<std::vector<std::string>> exchange_groups;  // train_target_run fills the shapes grammar's (colours, shapes)
  // Weight of the preference loss (DPO, Rafailov et al. 2023) on the target's own samples judged by the prompt checker
  // (train samples --verdicts): per step, preference_pairs pairs of one caption's passing and failing image, and the
  // loss -log σ(β [(log π(pass) - log π_ref(pass)) - (log π(fail) - log π_ref(fail))]), log-probabilities summed over
  // the image's tokens under the caption, π_ref the model the run started from (init_from, frozen). Unlike fitting
  // the passes alone it also pushes down what the model draws wrong. One more forward and backward pass on 2 x pairs
  // images and a frozen forward per step. 0: off.
  double preference = 0;
  double preference_beta = 0.1;
  int preference_pairs = 8;
  double ema_decay = 0.999;  // exponential moving average of the weights (ramped up: min(decay, (1+t)/(10+t)))
  std::uint64_t seed = 0;
  std::string device = "cpu";  // "cpu" or "cuda": where the model, its EMA and the optimizer state live
  std::string to_string() const;
};

enum class DrafterObjective { Eagle, Lisa };
DrafterObjective parse_drafter_objective(const std::string& name);  // "eagle" | "lisa"; throws naming both
const char* drafter_objective_name(DrafterObjective objective);

// What every part trained beside a frozen target takes (self-distillation on the target's teacher-forced features).
struct DistillationParams {
  TrainSchedule schedule{2000, 50, 1e-3, 0.1};
  int batch = 16;
  double caption_dropout = 0.2;  // rows trained under the null caption (the CFG stream)
  double ce_weight = 0.1;        // λ_p: the soft cross-entropy against the target's distribution, beside Smooth-L1
  double grad_clip = 0.5;
  int log_every = 10;
  int checkpoint_every = 100;
  int stop_at = 0;
  int held_out_images = 64;
  std::uint64_t seed = 0;
  // A fresh run's weights from another run of the same part (its checkpoint) instead of new ones: a warm start for
  // a target that continued the one that part was trained on. Empty: new weights.
  std::string init_from;
  std::string to_string() const;
};

struct DrafterTrainParams : DistillationParams {
  double feature_noise = 0.2;  // uniform input-feature noise, as a fraction of the features' RMS (EAGLE)
  double weight_decay = 0.0;
  DrafterObjective objective = DrafterObjective::Eagle;
  // lisa: w_t = clamp(H_t · S_t / mean, w_min, w_max), S_t the mass within the codebook ball of radius ρ
  // around the target's mode; ρ is the mean distance of a code to its `locality_neighbours`-th nearest
  // code, and the soft target is smoothed with a Gaussian kernel of σ = ρ / 2.
  bool lisa_weights = true;
  bool lisa_smoothing = true;
  int locality_neighbours = 8;
  double weight_min = 0.2, weight_max = 5.0;
  std::string to_string() const;
};

struct SpatialHeadsTrainParams : DistillationParams {
  int horizontal = 5;
  int vertical = 1;
  std::string to_string() const;
};

struct VqTrainParams {
  TrainSchedule schedule{6000, 200, 5e-4, 0.1};
  double commitment = 0.25;
  int dead_code_every = 200;  // steps between dead-code resets
  int log_every = 25;
  int checkpoint_every = 250;
  std::uint64_t seed = 0;
  std::string to_string() const;
};

struct FeatureNetTrainParams {
  TrainSchedule schedule{3000, 100, 2e-3, 0.05};
  int log_every = 50;
  int checkpoint_every = 500;
  std::uint64_t seed = 0;
  std::string to_string() const;
};

struct SoftCalibrationParams {
  double delta = 0.05;  // quantile level 1 - delta
  int positions_per_image = 16;
  double confidence_max = 0.9;
  std::uint64_t seed = 0;
  std::string to_string() const;
};

}  // namespace speculum
