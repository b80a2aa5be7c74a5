// Model bundles: a folder with `speculum.json` (the manifest) and safetensors weight files (DESIGN.md §2).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/model_config.h"
#include "sampling/sampling_params.h"

namespace speculum {

inline constexpr const char* kBundleFormat = "speculum-bundle/1";
inline constexpr const char* kManifestName = "speculum.json";

// A drafter the bundle ships (manifest "drafters": {"<name>": {"weights": ..., "objective": ...}}).
// Names: "eagle" (serves eagle and lantern) and "lisa"; its tensors follow drafter_tensor_specs(target).
struct DrafterEntry {
  std::string weights;
  std::string objective;  // how it was trained: "eagle" | "lisa"
  DrafterConvention convention = DrafterConvention::Speculum;  // manifest "convention": "speculum" | "lantern"
  double norm_eps = 0;    // its layer's RMSNorm epsilon; 0: the target's
  int rope_grid = 0;      // the square grid of its 2D RoPE (LANTERN fixes it from input_type); 0: the target's
};
inline const std::vector<std::string> kDrafterNames = {"eagle", "lisa"};

// LISA's Geometry-Aware Soft Verification bounds, measured by `speculum-cli calibrate` (manifest
// "soft_verification"): soft-accept x after a strict rejection iff min(alpha·Δ², beta·g) <= u_bound,
// Δ <= delta_max and the target's top probability <= confidence_max (research/seed-methods.md §2.4).
struct SoftVerificationBounds {
  double alpha = 0, beta = 0, u_bound = 0, delta_max = 0, confidence_max = 0.9;
  int samples = 0;  // positions the calibration measured
};

// SSD's spatial heads (manifest "ssd_heads": {"weights": ..., "horizontal": k_h, "vertical": k_v}): k_h heads
// for offsets 1..k_h along a row and k_v for 1..k_v rows down; tensors follow spatial_heads_tensor_specs.
struct SpatialHeadsEntry {
  std::string weights;
  int horizontal = 0;
  int vertical = 0;
};
inline constexpr int kMaxHorizontalHeads = 8;
inline constexpr int kMaxVerticalHeads = 2;

// MuLo-SD's low-resolution drafter (manifest "low_res_drafter": {"weights": ..., "grid": [rows, cols]}): the
// target's architecture and vocabulary at a grid smaller by one factor r in both directions (r = 2 or 4),
// trained on the same images downscaled by r (research/seed-methods.md §4, docs/methods.md).
struct LowResDrafterEntry {
  std::string weights;
  int grid_rows = 0;
  int grid_cols = 0;
};
inline const std::vector<int> kLowResFactors = {2, 4};

// "prompt_guide": how prompts for this model read, and prompts it draws well, chosen by a measurement
// (speculum-cli examples) rather than by hand. What a front end shows a new user.
struct PromptGuide {
  std::string grammar;                // e.g. "[a|two|three] [small|large] COLOUR SHAPE ... on a ... background"
  std::vector<std::string> examples;  // best first
  std::string chosen_by;              // how they were chosen, e.g. "checker: 4/4 seeds with ar, 60 candidates"
};
inline constexpr std::size_t kMaxGuideExamples = 32;
inline constexpr std::size_t kMaxGuideText = 400;  // characters per grammar, example or note

// condition.kind "t5" (LlamaGen T2I): the T5 folder the caption features come from. The bundle refers to it
// rather than copying it (flan-t5-xl is 11 GB as published in f32, and one encoder serves every T2I bundle of a
// size); a relative folder is relative to the bundle. The fingerprint (t5_fingerprint) is checked at load.
struct T5Reference {
  std::string folder;
  std::string fingerprint;
  bool clean_captions = true;  // LlamaGen cleans every prompt (clean_caption twice) before tokenising
};

struct BundleManifest {
  std::string dir;   // where it was read from
  std::string name;
  int image_size = 64;
  GptConfig target;
  std::string target_weights = "target.safetensors";
  VqConfig tokenizer;
  std::string tokenizer_weights = "vq.safetensors";
  std::vector<std::string> classes;     // class conditioning: one name per class id
  std::vector<std::string> text_vocab;  // text conditioning: word of each text token id
  std::optional<T5Reference> t5;        // text conditioning from T5 features (target.caption_source T5)
  std::map<std::string, DrafterEntry> drafters;
  std::optional<SoftVerificationBounds> soft_verification;
  std::optional<SpatialHeadsEntry> ssd_heads;
  std::optional<LowResDrafterEntry> low_res_drafter;
  SamplingParams sampling;              // "sampling": what this model is best sampled with (engine defaults when absent)
  WeightFormat weight_format = WeightFormat::F32;  // "weight_format": how its matrices run unless the user says
  // "method_options": {"ssd": {"rounds": 8}, ...}: the method options measured best on this model, where they differ
  // from the engine's defaults (the papers' values). A request's own options win; generate() fills in the rest from here.
  std::map<std::string, std::map<std::string, double>> method_options;

  std::optional<PromptGuide> prompt_guide;

  std::string target_path() const { return dir + "/" + target_weights; }
  std::string tokenizer_path() const { return dir + "/" + tokenizer_weights; }
  std::string drafter_path(const std::string& name) const { return dir + "/" + drafters.at(name).weights; }
  std::string ssd_heads_path() const { return dir + "/" + ssd_heads.value().weights; }
  std::string low_res_drafter_path() const { return dir + "/" + low_res_drafter.value().weights; }
  std::string t5_folder() const;  // the T5 folder, resolved against the bundle folder
  // The low-resolution drafter's architecture: the target's at its grid.
  GptConfig low_res_config() const;
  int low_res_factor() const { return target.grid_rows / low_res_drafter.value().grid_rows; }
};

class JsonFields;
// The manifest's "tokenizer" object, also written alone by `speculum-cli train vq` (tokenizer.json).
VqConfig read_tokenizer_section(const JsonFields& section);
nlohmann::json tokenizer_section(const VqConfig& config, const std::string& weights);

// Reads and checks the manifest (fields, types, consistency between tokenizer, target and image size).
BundleManifest read_manifest(const std::string& dir);
// Writes `dir/speculum.json` atomically.
void write_manifest(const BundleManifest& manifest, const std::string& dir);

struct WeightCheck {
  std::vector<std::string> unexpected;  // tensors in the file the architecture does not use (tolerated)
};

// Checks that `file` holds every tensor of `specs` with that shape and a floating dtype; throws an
// Error naming the first missing or mismatched tensor and the manifest field that implies its shape.
WeightCheck check_weights(const std::string& file, const std::vector<TensorSpec>& specs);

}  // namespace speculum
