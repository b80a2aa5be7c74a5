// Model bundles: a folder with `speculum.json` (the manifest) and safetensors weight files (DESIGN.md §2).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/model_config.h"
#include "sampling/sampling_params.h"

namespace speculum {

inline constexpr const char* kBundleFormat = "speculum-bundle/1";
inline constexpr const char* kManifestName = "speculum.json";

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
  std::string drafters_json = "{}";     // kept verbatim for the drafter issues
  SamplingParams sampling;              // "sampling": what this model is best sampled with (engine defaults when absent)

  std::string target_path() const { return dir + "/" + target_weights; }
  std::string tokenizer_path() const { return dir + "/" + tokenizer_weights; }
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
