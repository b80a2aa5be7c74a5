// LANTERN's released EAGLE-style drafters for LlamaGen T2I (`llamagen_drafter`, `llamagen2_drafter`: config.json +
// pytorch_model.bin) installed as a converted T2I bundle's `eagle` drafter. LANTERN's conventions differ from
// Speculum-trained drafters, and the manifest records which one a drafter follows (convention "lantern"): its own
// token embedding, features taken after the target's final norm, a layer norm epsilon of its own, no final norm
// before the target's output head, the caption rows in its context, and the caption padding rows computed as
// LANTERN's LlamaGen port computes them (models/drafter.h).
#include "speculum.h"

#include <filesystem>

#include "io/bundle.h"
#include "io/input_file.h"
#include "io/json_fields.h"
#include "io/limits.h"
#include "io/torch_checkpoint.h"
#include "models/drafter.h"

namespace speculum {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWeightsName = "eagle-lantern.safetensors";

// LANTERN's Model.__init__ hard-codes the drafter's RoPE grid from input_type: "t2i" 16x16, "t2i2" 32x32.
int lantern_grid_side(const std::string& input_type, const std::string& config) {
  if (input_type == "t2i") return 16;
  if (input_type == "t2i2") return 32;
  throw Error(config + ": field 'input_type' is '" + short_text(input_type) + "' (LanternLlamaGen drafters: t2i or t2i2)");
}

}  // namespace

ConvertReport import_lantern_drafter(const LanternDrafterParams& params) {
  const std::string config_path = params.drafter_dir + "/config.json";
  const std::string weights_path = params.drafter_dir + "/pytorch_model.bin";
  const nlohmann::json doc = parse_untrusted_json(
      read_input_file(config_path, limits::kMaxT5JsonBytes, "drafter config", " (a LANTERN drafter folder holds config.json and pytorch_model.bin)"),
      config_path, 16);
  if (!doc.is_object()) throw Error(config_path + ": not a JSON object");
  const JsonFields c(doc, config_path);
  BundleManifest m = read_manifest(params.bundle_dir);
  const GptConfig& g = m.target;
  if (g.caption_source != CaptionSource::T5)
    throw Error("bundle '" + params.bundle_dir + "' is not a LlamaGen text-to-image bundle: LANTERN's LlamaGen drafters draft for T2I models");
  const auto same = [&](const char* field, int value, int expected, const std::string& what) {
    if (value != expected)
      throw Error(config_path + ": field '" + field + "' is " + std::to_string(value) + " but the bundle's target has " + what + " " +
                  std::to_string(expected) + ": this drafter belongs to another model");
  };
  same("hidden_size", c.integer("hidden_size"), g.dim, "width");
  same("num_attention_heads", c.integer("num_attention_heads"), g.n_head, "heads");
  same("num_key_value_heads", c.integer("num_key_value_heads", g.n_head), g.n_head, "heads");
  same("intermediate_size", c.integer("intermediate_size"), g.ffn_hidden(), "FFN width");
  same("vocab_size", c.integer("vocab_size"), g.vocab_size, "vocabulary");
  same("num_hidden_layers", c.integer("num_hidden_layers", 1), 1, "drafter layers (LANTERN's drafters have)");
  // LANTERN rotates the drafter's token m by cell (m / side, m % side) whatever the target's grid: exact for targets
  // of that grid, and for smaller ones as LANTERN's own code runs them; a larger target would run past its table.
  const int side = lantern_grid_side(c.string("input_type"), config_path);
  if (side * side < g.image_tokens())
    throw Error(config_path + ": input_type '" + c.string("input_type") + "' fixes LANTERN's drafter grid at " + std::to_string(side) + "x" +
                std::to_string(side) + ", fewer tokens than the bundle's " + std::to_string(g.grid_rows) + "x" + std::to_string(g.grid_cols) +
                " grid (a 512 px model needs a t2i2 drafter)");
  const double eps = c.number("rms_norm_eps", 1e-6);
  if (!(eps > 0 && eps < 1)) throw Error(config_path + ": field 'rms_norm_eps' must be in (0, 1)");

  const TorchCheckpoint ckpt = TorchCheckpoint::open(weights_path);
  const std::int64_t d = g.dim, f = g.ffn_hidden();
  ConvertReport report;
  report.out_dir = params.bundle_dir;
  // LANTERN's names -> Speculum's; q, k and v are stacked into LlamaGen's wqkv (LANTERN keeps LlamaGen's RoPE pairs).
  struct Piece {
    const char* lantern;
    std::vector<std::int64_t> shape;
  };
  const auto read = [&](const Piece& p) {
    const CheckpointTensor* t = ckpt.find(p.lantern);
    if (!t) throw Error("'" + weights_path + "': tensor '" + p.lantern + "' " + shape_to_string(p.shape) + " is missing");
    if (t->shape() != p.shape)
      throw Error("'" + weights_path + "': tensor '" + p.lantern + "' has shape " + shape_to_string(t->shape()) + ", the bundle implies " +
                  shape_to_string(p.shape));
    if (t->dtype() != DType::F32 && t->dtype() != DType::F16 && t->dtype() != DType::BF16)
      throw Error("'" + weights_path + "': tensor '" + p.lantern + "' is " + dtype_name(t->dtype()) + " (weights must be F32, F16 or BF16)");
    return std::pair{t->dtype(), ckpt.read(*t)};
  };
  std::vector<std::pair<std::string, std::pair<DType, std::vector<std::uint8_t>>>> out;
  const auto keep = [&](const std::string& name, const Piece& p) { out.push_back({name, read(p)}); };
  keep("embed_tokens.weight", {"embed_tokens.weight", {g.vocab_size, d}});
  keep("fc.weight", {"fc.weight", {d, 2 * d}});
  if (ckpt.find("fc.bias")) {
    keep("fc.bias", {"fc.bias", {d}});
  } else {  // config "bias": false
    out.push_back({"fc.bias", {DType::F32, std::vector<std::uint8_t>(static_cast<std::size_t>(d) * 4, 0)}});
    report.lines.push_back("drafter: no fc.bias (bias false): zeros");
  }
  {
    auto q = read({"layers.0.self_attn.q_proj.weight", {d, d}}), k = read({"layers.0.self_attn.k_proj.weight", {d, d}}),
         v = read({"layers.0.self_attn.v_proj.weight", {d, d}});
    if (q.first != k.first || k.first != v.first) throw Error("'" + weights_path + "': q_proj, k_proj and v_proj differ in dtype");
    std::vector<std::uint8_t> wqkv = q.second;
    wqkv.insert(wqkv.end(), k.second.begin(), k.second.end());
    wqkv.insert(wqkv.end(), v.second.begin(), v.second.end());
    out.push_back({"layers.0.attention.wqkv.weight", {q.first, std::move(wqkv)}});
  }
  keep("layers.0.attention.wo.weight", {"layers.0.self_attn.o_proj.weight", {d, d}});
  keep("layers.0.feed_forward.w1.weight", {"layers.0.mlp.gate_proj.weight", {f, d}});
  keep("layers.0.feed_forward.w3.weight", {"layers.0.mlp.up_proj.weight", {f, d}});
  keep("layers.0.feed_forward.w2.weight", {"layers.0.mlp.down_proj.weight", {d, f}});
  keep("layers.0.ffn_norm.weight", {"layers.0.post_attention_layernorm.weight", {d}});
  for (const auto& t : ckpt.tensors()) {
    bool used = t.name == "fc.bias" || t.name == "embed_tokens.weight" || t.name == "fc.weight" || t.name.rfind("layers.0.self_attn.", 0) == 0 ||
                t.name.rfind("layers.0.mlp.", 0) == 0 || t.name == "layers.0.post_attention_layernorm.weight";
    if (!used) throw Error("'" + weights_path + "': tensor '" + t.name + "' is not part of LANTERN's one-layer drafter (a newer layout?)");
  }

  const std::vector<TensorSpec> specs = drafter_tensor_specs(g, DrafterConvention::Lantern);
  std::vector<TensorToWrite> tensors;
  for (const auto& spec : specs) {
    const auto it = std::find_if(out.begin(), out.end(), [&](const auto& o) { return o.first == spec.name; });
    if (it == out.end()) throw Error("LANTERN import: no tensor for '" + spec.name + "'");
    tensors.push_back({spec.name, it->second.first, spec.shape, it->second.second.data(), it->second.second.size()});
  }
  const fs::path weights = fs::path(params.bundle_dir) / kWeightsName;
  write_safetensors(weights.string(), tensors, {{"converted_from", "LANTERN drafter " + fs::path(params.drafter_dir).filename().string()}});
  m.drafters["eagle"] = {kWeightsName, "eagle", DrafterConvention::Lantern, eps, side};
  try {
    write_manifest(m, params.bundle_dir);
  } catch (...) {
    std::error_code ignored;
    fs::remove(weights, ignored);
    throw;
  }
  report.lines.push_back("drafter: LANTERN " + std::to_string(tensors.size()) + " tensors (q, k, v stacked into wqkv), rms_norm_eps " +
                         std::to_string(eps) + ", grid " + std::to_string(side) + "x" + std::to_string(side) + " (input_type " +
                         c.string("input_type") + ")");
  report.lines.push_back("installed as the 'eagle' drafter (convention lantern) in " + (fs::path(params.bundle_dir) / kManifestName).string());
  return report;
}

}  // namespace speculum
