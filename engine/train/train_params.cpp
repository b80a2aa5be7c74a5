#include "train/train_params.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "error.h"

namespace speculum {

double TrainSchedule::lr_at(int step) const {
  if (step < warmup) return peak_lr * (step + 1) / warmup;
  const double t = std::min(1.0, double(step - warmup) / std::max(1, steps - warmup));
  const double cosine = 0.5 * (1 + std::cos(M_PI * t));
  return peak_lr * (final_lr_fraction + (1 - final_lr_fraction) * cosine);
}

std::string TrainSchedule::to_string() const {
  std::ostringstream s;
  s << "steps=" << steps << " warmup=" << warmup << " lr=" << peak_lr << " final_lr_fraction=" << final_lr_fraction;
  return s.str();
}

DrafterObjective parse_drafter_objective(const std::string& name) {
  if (name == "eagle") return DrafterObjective::Eagle;
  if (name == "lisa") return DrafterObjective::Lisa;
  throw Error("unknown drafter objective '" + name + "' (allowed: eagle, lisa)");
}

const char* drafter_objective_name(DrafterObjective objective) {
  return objective == DrafterObjective::Lisa ? "lisa" : "eagle";
}

std::string TargetTrainParams::to_string() const {
  std::ostringstream s;
  s << schedule.to_string() << " batch=" << batch << " caption_dropout=" << caption_dropout << " weight_decay=" << weight_decay
    << " grad_clip=" << grad_clip <<  " object_weight=" << object_weight << (tops_weight > 0 ? " tops_weight=" + std::to_string(tops_weight) : std::string()) << " caption_reading=" << caption_reading << " caption_contrast=" << caption_contrast << (contrast_object_tops ? " contrast_on=object-tops" : "")
    << (contrast_exchange > 0 ? " contrast_exchange=" + std::to_string(contrast_exchange) : std::string())
    << (contrast_copy > 0 ? " contrast_copy=" + std::to_string(contrast_copy) : std::string())
    << " ema_decay=" << ema_decay << " seed=" << seed << " device=" << device;
  if (stop_at) s << " stop_at=" << stop_at;
  if (!init_from.empty()) s << " init_from=" << init_from;
  if (grown_lr_scale != 1) s << " grown_lr_scale=" << grown_lr_scale;
  if (preference > 0) s << " preference=" << preference << " preference_beta=" << preference_beta << " preference_pairs=" << preference_pairs;
  return s.str();
}

std::string DistillationParams::to_string() const {
  std::ostringstream s;
  s << schedule.to_string() << " batch=" << batch << " caption_dropout=" << caption_dropout << " ce_weight=" << ce_weight
    << " grad_clip=" << grad_clip << " seed=" << seed;
  if (stop_at) s << " stop_at=" << stop_at;
  if (!init_from.empty()) s << " init_from=" << init_from;
  return s.str();
}

std::string DrafterTrainParams::to_string() const {
  std::ostringstream s;
  s << "objective=" << drafter_objective_name(objective) << " " << DistillationParams::to_string() << " feature_noise=" << feature_noise;
  if (objective == DrafterObjective::Lisa) s << " lisa_weights=" << lisa_weights << " lisa_smoothing=" << lisa_smoothing;
  return s.str();
}

std::string SpatialHeadsTrainParams::to_string() const {
  return "horizontal=" + std::to_string(horizontal) + " vertical=" + std::to_string(vertical) + " " + DistillationParams::to_string();
}

std::string VqTrainParams::to_string() const {
  std::ostringstream s;
  s << schedule.to_string() << " commitment=" << commitment << " dead_code_every=" << dead_code_every << " seed=" << seed;
  return s.str();
}

std::string FeatureNetTrainParams::to_string() const {
  std::ostringstream s;
  s << schedule.to_string() << " seed=" << seed;
  return s.str();
}

std::string SoftCalibrationParams::to_string() const {
  std::ostringstream s;
  s << "delta=" << delta << " positions_per_image=" << positions_per_image << " confidence_max=" << confidence_max
    << " seed=" << seed;
  return s.str();
}

}  // namespace speculum
