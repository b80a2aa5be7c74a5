#include "io/t5_folder.h"
#include "io/fnv1a.h"

#include <cstdio>
#include <filesystem>
#include <set>

#include "error.h"
#include "io/input_file.h"
#include "io/json_fields.h"
#include "io/limits.h"

namespace speculum {

namespace fs = std::filesystem;

T5Config parse_t5_config(const std::string& text, const std::string& path) {
  const nlohmann::json doc = parse_untrusted_json(text, path, 16);
  if (!doc.is_object()) throw Error(path + ": not a JSON object");
  const JsonFields f(doc, path);
  T5Config c;
  if (f.has("model_type") && f.string("model_type") != "t5")
    throw Error(path + ": field 'model_type' is '" + short_text(f.string("model_type")) + "' (a T5 encoder needs 't5')");
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("d_model");
  c.d_kv = f.integer("d_kv");
  c.d_ff = f.integer("d_ff");
  c.num_layers = f.integer("num_layers");
  c.num_heads = f.integer("num_heads");
  c.relative_attention_num_buckets = f.integer("relative_attention_num_buckets", 32);
  c.relative_attention_max_distance = f.integer("relative_attention_max_distance", 128);
  c.layer_norm_epsilon = f.number("layer_norm_epsilon", 1e-6);
  const std::string proj = f.has("feed_forward_proj") ? f.string("feed_forward_proj") : "relu";
  // transformers: "gated-gelu" means the tanh GELU ("gelu_new"); the last part names the activation.
  const auto dash = proj.rfind('-');
  const std::string act = dash == std::string::npos ? proj : proj.substr(dash + 1);
  c.gated = dash != std::string::npos;
  if ((c.gated && proj.substr(0, dash) != "gated") || (act != "gelu" && act != "relu" && act != "silu" && act != "gelu_new"))
    throw Error(path + ": field 'feed_forward_proj' is '" + short_text(proj) +
                "' (allowed: relu, gelu, silu, gated-gelu, gated-relu, gated-silu)");
  c.activation = (act == "gelu" && c.gated) ? "gelu_new" : act;
  if (f.has("torch_dtype") && doc["torch_dtype"].is_string()) c.torch_dtype = f.string("torch_dtype");
  const auto in = [&](const char* field, int value, int lo, int hi) {
    if (value < lo || value > hi)
      throw Error(path + ": field '" + field + "' is " + std::to_string(value) + " (allowed: " + std::to_string(lo) + ".." +
                  std::to_string(hi) + ")");
  };
  in("vocab_size", c.vocab_size, 2, limits::kMaxT5Vocab);
  in("d_model", c.d_model, 1, limits::kMaxT5Width);
  in("d_kv", c.d_kv, 1, limits::kMaxT5Width);
  in("d_ff", c.d_ff, 1, 4 * limits::kMaxT5Width);
  in("num_layers", c.num_layers, 1, limits::kMaxT5Layers);
  in("num_heads", c.num_heads, 1, limits::kMaxT5Width);
  in("relative_attention_num_buckets", c.relative_attention_num_buckets, 2, 4096);
  in("relative_attention_max_distance", c.relative_attention_max_distance, 1, 1 << 20);
  if (c.inner_dim() > limits::kMaxT5Width)
    throw Error(path + ": d_kv x num_heads = " + std::to_string(c.inner_dim()) + " exceeds " + std::to_string(limits::kMaxT5Width));
  if (!(c.layer_norm_epsilon > 0 && c.layer_norm_epsilon < 1)) throw Error(path + ": field 'layer_norm_epsilon' must be in (0, 1)");
  return c;
}

std::map<std::string, std::string> parse_weight_index(const std::string& text, const std::string& index) {
  const nlohmann::json doc = parse_untrusted_json(text, index, 16);
  if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object())
    throw Error(index + ": no 'weight_map' object (not a Hugging Face weight index)");
  std::map<std::string, std::string> map;
  for (const auto& [tensor, file] : doc["weight_map"].items()) {
    if (!file.is_string()) throw Error(index + ": weight_map['" + short_text(tensor) + "'] is not a file name");
    if (!is_plain_file_name(file.get<std::string>()))
      throw Error(index + ": shard '" + short_text(file.get<std::string>()) + "' must be a file name inside the folder");
    map[tensor] = file.get<std::string>();
  }
  if (map.empty()) throw Error(index + ": the weight_map is empty");
  return map;
}

namespace {

T5Config read_t5_config(const std::string& path) {
  return parse_t5_config(read_input_file(path, limits::kMaxT5JsonBytes, "T5 config", " (is this a Hugging Face T5 folder?)"), path);
}

void read_index(T5Folder& folder, const std::string& index, std::uint64_t max_shard_bytes, const char* what) {
  std::set<std::string> shards;
  for (const auto& [tensor, file] : parse_weight_index(read_input_file(index, limits::kMaxT5JsonBytes, "weight index"), index)) {
    folder.weight_map[tensor] = folder.dir + "/" + file;
    shards.insert(folder.dir + "/" + file);
  }
  if (shards.size() > static_cast<std::size_t>(limits::kMaxT5Shards))
    throw Error(index + ": " + std::to_string(shards.size()) + " shards (the limit is " + std::to_string(limits::kMaxT5Shards) + ")");
  for (const std::string& shard : shards) {
    std::error_code ec;
    if (!fs::exists(shard, ec))
      throw Error(index + " names the shard '" + fs::path(shard).filename().string() + "', which is not in the folder");
    folder.weight_bytes += check_input_file(shard, max_shard_bytes, what);
    folder.weight_files.push_back(shard);
  }
}

}  // namespace

const char* t5_layout_name(T5WeightLayout layout) {
  switch (layout) {
    case T5WeightLayout::Safetensors: return "model.safetensors";
    case T5WeightLayout::ShardedSafetensors: return "sharded safetensors (model.safetensors.index.json)";
    case T5WeightLayout::TorchBin: return "pytorch_model.bin";
    case T5WeightLayout::ShardedTorchBin: return "sharded pytorch_model.bin (pytorch_model.bin.index.json)";
  }
  return "?";
}

T5Folder open_t5_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("T5 folder '" + dir + "' is not a folder");
  T5Folder folder;
  folder.dir = dir;
  folder.config_path = dir + "/config.json";
  folder.config = read_t5_config(folder.config_path);
  folder.spiece_path = dir + "/spiece.model";
  check_input_file(folder.spiece_path, limits::kMaxSentencePieceBytes, "SentencePiece model",
                   " (a T5 folder needs the tokenizer's spiece.model beside config.json)");
  // The layouts transformers writes, in the order it looks for them; an index lists shards.
  constexpr std::uint64_t kMaxWeightFile = 1ull << 40;
  const std::pair<const char*, T5WeightLayout> layouts[] = {{"model.safetensors", T5WeightLayout::Safetensors},
                                                            {"model.safetensors.index.json", T5WeightLayout::ShardedSafetensors},
                                                            {"pytorch_model.bin", T5WeightLayout::TorchBin},
                                                            {"pytorch_model.bin.index.json", T5WeightLayout::ShardedTorchBin}};
  for (const auto& [name, layout] : layouts) {
    const std::string path = dir + "/" + name;
    if (!fs::exists(path, ec)) continue;
    folder.layout = layout;
    if (layout == T5WeightLayout::Safetensors || layout == T5WeightLayout::TorchBin) {
      folder.weight_files = {path};
      folder.weight_bytes = check_input_file(path, kMaxWeightFile, "T5 weights");
    } else {
      read_index(folder, path, kMaxWeightFile, "T5 weight shard");
    }
    return folder;
  }
  throw Error("T5 folder '" + dir + "' has no weights (looked for model.safetensors, model.safetensors.index.json, "
              "pytorch_model.bin, pytorch_model.bin.index.json)");
}

std::vector<TensorSpec> t5_encoder_tensor_specs(const T5Config& c) {
  const std::int64_t d = c.d_model, inner = c.inner_dim(), ff = c.d_ff;
  std::vector<TensorSpec> specs = {{"shared.weight", {c.vocab_size, d}}};
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = "encoder.block." + std::to_string(i) + ".layer.";
    for (const char* m : {"q", "k", "v"}) specs.push_back({p + "0.SelfAttention." + m + ".weight", {inner, d}});
    specs.push_back({p + "0.SelfAttention.o.weight", {d, inner}});
    if (i == 0) specs.push_back({p + "0.SelfAttention.relative_attention_bias.weight", {c.relative_attention_num_buckets, c.num_heads}});
    specs.push_back({p + "0.layer_norm.weight", {d}});
    if (c.gated) {
      specs.push_back({p + "1.DenseReluDense.wi_0.weight", {ff, d}});
      specs.push_back({p + "1.DenseReluDense.wi_1.weight", {ff, d}});
    } else {
      specs.push_back({p + "1.DenseReluDense.wi.weight", {ff, d}});
    }
    specs.push_back({p + "1.DenseReluDense.wo.weight", {d, ff}});
    specs.push_back({p + "1.layer_norm.weight", {d}});
  }
  specs.push_back({"encoder.final_layer_norm.weight", {d}});
  return specs;
}

std::string t5_fingerprint(const T5Folder& folder) {
  const std::string spiece = read_input_file(folder.spiece_path, limits::kMaxSentencePieceBytes, "SentencePiece model");
  Fnv1a hash;
  hash.add(spiece.data(), spiece.size());
  const T5Config& c = folder.config;
  const std::string hex = hash.hex();
  return "t5 d_model " + std::to_string(c.d_model) + ", " + std::to_string(c.num_layers) + " layers, " + std::to_string(c.num_heads) +
         " heads, d_kv " + std::to_string(c.d_kv) + ", d_ff " + std::to_string(c.d_ff) + ", vocab " + std::to_string(c.vocab_size) +
         "; spiece.model " + std::to_string(spiece.size()) + " bytes, fnv1a " + hex;
}

}  // namespace speculum
