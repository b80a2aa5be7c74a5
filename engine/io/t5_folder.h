// A T5 encoder in the Hugging Face folder layout (flan-t5-xl, t5-v1_1-*): config.json, spiece.model and the
// weights in one of four layouts. Read and checked without LibTorch: sizes, tensor names and which files hold
// them, so a bundle can say what is wrong before gigabytes are loaded.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/model_config.h"

namespace speculum {

// transformers' T5Config, the fields an encoder needs.
struct T5Config {
  int vocab_size = 32128;
  int d_model = 2048;
  int d_kv = 64;
  int d_ff = 5120;
  int num_layers = 24;
  int num_heads = 32;
  int relative_attention_num_buckets = 32;
  int relative_attention_max_distance = 128;
  double layer_norm_epsilon = 1e-6;
  bool gated = true;                   // feed_forward_proj "gated-*": wo(act(wi_0 x) * wi_1 x)
  std::string activation = "gelu_new";  // "gelu_new" (tanh GELU), "gelu", "relu" or "silu"
  std::string torch_dtype;             // as stored ("bfloat16", "float32", ...); informational

  int inner_dim() const { return d_kv * num_heads; }
};

// transformers' config.json of a T5 (text: the file's contents; `path` names it in errors): sizes within
// limits::kMaxT5*, a known feed_forward_proj. Throws Error naming the file and field.
T5Config parse_t5_config(const std::string& text, const std::string& path);
// A Hugging Face weight index ({"weight_map": {tensor: shard file}}): tensor -> shard file name, each a plain file name.
std::map<std::string, std::string> parse_weight_index(const std::string& text, const std::string& path);

enum class T5WeightLayout { Safetensors, ShardedSafetensors, TorchBin, ShardedTorchBin };
const char* t5_layout_name(T5WeightLayout layout);

struct T5Folder {
  std::string dir;
  T5Config config;
  std::string config_path;
  std::string spiece_path;
  T5WeightLayout layout = T5WeightLayout::Safetensors;
  std::vector<std::string> weight_files;          // paths, in the order they are read
  std::map<std::string, std::string> weight_map;  // sharded layouts: tensor name -> path (from the index)
  std::uint64_t weight_bytes = 0;                 // total size of the weight files
};

// Finds and checks the folder's files: config.json (T5, sizes within limits), spiece.model, and the first weight
// layout present of model.safetensors, model.safetensors.index.json, pytorch_model.bin, pytorch_model.bin.index.json
// (every shard the index names must exist inside the folder). Throws Error naming the file and field.
T5Folder open_t5_folder(const std::string& dir);

// The encoder's tensors (transformers' T5EncoderModel names). The embedding is "shared.weight"; checkpoints that
// store it only as "encoder.embed_tokens.weight" are read under that name.
std::vector<TensorSpec> t5_encoder_tensor_specs(const T5Config& config);

// A short, stable description of what a bundle was converted with: sizes from config.json, the byte count and a
// 64-bit FNV-1a hash of spiece.model. Compared at load (the weights' layout may change: a .bin folder re-saved as
// safetensors is the same encoder).
std::string t5_fingerprint(const T5Folder& folder);

}  // namespace speculum
