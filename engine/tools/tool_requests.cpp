// What each tool request says it will run (the requests' to_string), one line of key=value pairs.
#include <sstream>

#include "speculum_tools.h"

namespace speculum {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

std::string TargetTrainRequest::to_string() const {
  std::ostringstream s;
  s << "vq=" << vq_run << " corpus=" << joined(corpora) << " out=" << out << " threads=" << threads << " dim=" << shape.dim
    << " layers=" << shape.layers << " heads=" << shape.heads << " text_encoder_layers=" << shape.text_encoder_layers
    << " image_positions=" << shape.image_positions << " " << params.to_string();
  if (!held_out.empty()) s << " held_out=" << held_out;
  if (!judged.empty()) s << " judged=" << joined(judged);
  return s.str();
}

std::string FrozenTargetRun::to_string() const {
  std::ostringstream s;
  s << "bundle=" << bundle << " corpus=" << joined(corpora) << " out=" << out << " device=" << device << " threads=" << threads;
  if (!held_out.empty()) s << " held_out=" << held_out;
  return s.str();
}

std::string DrafterTrainRequest::to_string() const {
  return run.to_string() + " " + params.to_string() + (install ? " install" : "");
}

std::string SpatialHeadsTrainRequest::to_string() const {
  return run.to_string() + " " + params.to_string() + (install ? " install" : "");
}

std::string LowResTrainRequest::to_string() const {
  return run.to_string() + " factor=" + std::to_string(factor) + " " + params.to_string() + (install ? " install" : "");
}

std::string SamplesRequest::to_string() const {
  std::ostringstream s;
  s << "bundle=" << bundle << " out=" << out << " count=" << count << " scene_seed=" << scene_seed << " device=" << device
    << " threads=" << threads;
  if (!classes.empty()) {
    s << " classes=";
    for (std::size_t i = 0; i < classes.size(); ++i) s << (i ? "," : "") << classes[i];
  }
  if (!prompts_file.empty()) s << " prompts_file=" << prompts_file;
  if (per_caption != 1) s << " per_caption=" << per_caption;
  if (judge) s << (only_passing ? " only_passing" : " judged");
  return s.str();
}

std::string DrafterFitRequest::to_string() const {
  return "bundle=" + bundle + " drafter=" + drafter + " corpus=" + corpus + " images=" + std::to_string(images);
}

std::string BundleRequest::to_string() const {
  return "vq=" + vq_run + " target=" + target_run + " out=" + out + (fp16 ? " f16 " : " f32 ") + sampling.to_string();
}

std::string CalibrateRequest::to_string() const {
  std::ostringstream s;
  s << "bundle=" << bundle << " images=" << images << " scene_seed=" << scene_seed << " " << params.to_string()
    << " threads=" << threads << (dry_run ? " dry_run" : "");
  if (!prompts_file.empty()) s << " prompts_file=" << prompts_file;
  return s.str();
}

std::string VqTrainRequest::to_string() const {
  std::ostringstream s;
  s << "out=" << out << " codebook=" << config.codebook_size << " ch=" << config.ch << " norm_groups=" << config.norm_groups
    << " " << params.to_string() << " batch=" << batch << " crop=" << crop << " held_out=" << held_out << " threads=" << threads;
  if (!emoji.empty()) s << " emoji=" << emoji;
  return s.str();
}

std::string TokenizeRequest::to_string() const {
  std::ostringstream s;
  s << "vq=" << vq_run << " out=" << out << " count=" << count << " seed=" << seed << " downscale=" << downscale;
  if (!backgrounds.empty()) s << " backgrounds=" << joined(backgrounds);
  if (!families.empty()) s << " families=" << joined(families);
  if (!emoji.empty()) s << " emoji=" << emoji << (emoji_held_out ? " (held out)" : "");
  return s.str();
}

std::string FeatureNetTrainRequest::to_string() const {
  std::ostringstream s;
  s << "out=" << out << " " << params.to_string() << " batch=" << batch << " held_out=" << held_out << " threads=" << threads;
  return s.str();
}

std::string ShapesDatasetRequest::to_string() const {
  return "out=" + out + " count=" + std::to_string(count) + " seed=" + std::to_string(seed);
}

std::string GroundTruthCheckRequest::to_string() const {
  return "count=" + std::to_string(count) + " first_seed=" + std::to_string(first_seed) +
         (through_tokenizer.empty() ? "" : " through_tokenizer=" + through_tokenizer);
}

std::string EntropyRequest::to_string() const {
  std::ostringstream s;
  s << "bundle=" << bundle << " held_out=" << held_out << " count=" << count << " scene_seed=" << scene_seed
    << " flat_below=" << flat_below << " textured_above=" << textured_above << " threads=" << threads;
  return s.str();
}

}  // namespace speculum
