// create_random_bundle: random-weight bundles of preset sizes for tests, demos and benchmarks.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "data/shapes_scene.h"
#include "io/atomic_file.h"
#include "io/bundle.h"
#include "io/t5_folder.h"
#include "models/drafter.h"
#include "models/random_weights.h"
#include "models/spatial_heads.h"
#include "speculum.h"

namespace speculum {
namespace {

const std::vector<std::string> kClassNames = {"circle", "square", "triangle", "star", "ring",
                                              "cross", "heart", "moon", "stripes", "dots"};

struct Preset {
  int dim, n_layer, n_head, grid, vocab;
  VqConfig tokenizer;
  int num_classes = static_cast<int>(kClassNames.size());  // class-conditioned bundles
};

// LlamaGen's class-conditional GPTs at 256 px (16x16 tokens of the ds16 VQ, 16,384 codes, 1,000 classes):
// the real shapes, for timing and memory (baselines-models.md A.1).
Preset llamagen_preset(int dim, int n_layer, int n_head) {
  VqConfig vq;
  vq.codebook_size = 16384;
  vq.codebook_dim = 8;
  vq.z_channels = 256;
  vq.ch = 128;
  vq.ch_mult = {1, 1, 2, 2, 4};
  vq.num_res_blocks = 2;
  vq.norm_groups = 32;
  return {dim, n_layer, n_head, 16, 16384, vq, 1000};
}

Preset preset(const std::string& name) {
  VqConfig vq64;  // 16x16 tokens -> 64x64 pixels
  vq64.ch = 32;
  vq64.ch_mult = {1, 2, 2};
  vq64.z_channels = 64;
  vq64.num_res_blocks = 1;
  vq64.norm_groups = 8;
  if (name == "tiny") {
    VqConfig vq;
    vq.ch = 16;
    vq.ch_mult = {1, 2};
    vq.z_channels = 32;
    vq.num_res_blocks = 1;
    vq.norm_groups = 8;
    vq.codebook_size = 256;
    return {64, 2, 4, 8, 256, vq};
  }
  if (name == "small") return {256, 6, 4, 16, 1024, vq64};
  if (name == "base") return {512, 8, 8, 16, 1024, vq64};
  if (name == "llamagen-b") return llamagen_preset(768, 12, 12);    // 111M
  if (name == "llamagen-l") return llamagen_preset(1024, 24, 16);   // 343M
  if (name == "llamagen-xl") return llamagen_preset(1280, 36, 20);  // 775M
  throw Error("unknown preset '" + name + "' (allowed: tiny, small, base, llamagen-b, llamagen-l, llamagen-xl)");
}

}  // namespace

std::string RandomBundleParams::to_string() const {
  return "out=" + out_dir + " preset=" + preset + " condition=" + condition + " dim=" + std::to_string(dim) +
         " layers=" + std::to_string(n_layer) + " heads=" + std::to_string(n_head) + " grid=" + std::to_string(grid) +
         " vocab=" + std::to_string(vocab) + " seed=" + std::to_string(seed) + (fp16 ? " fp16" : "") +
         (drafters ? " drafters" : "");
}

void create_random_bundle(const RandomBundleParams& params) {
  if (params.out_dir.empty()) throw Error("create_random_bundle: no output folder given");
  Preset p = preset(params.preset);
  BundleManifest m;
  m.name = "random-" + params.preset + "-" + params.condition;
  GptConfig& g = m.target;
  g.dim = params.dim > 0 ? params.dim : p.dim;
  g.n_layer = params.n_layer > 0 ? params.n_layer : p.n_layer;
  g.n_head = params.n_head > 0 ? params.n_head : p.n_head;
  g.grid_rows = g.grid_cols = params.grid > 0 ? params.grid : p.grid;
  g.vocab_size = params.vocab > 0 ? params.vocab : p.vocab;
  m.tokenizer = p.tokenizer;
  m.tokenizer.codebook_size = g.vocab_size;
  m.image_size = g.grid_rows * m.tokenizer.downsample_factor();
  if (params.condition == "text") {
    g.condition = ConditionKind::Text;
    m.text_vocab = data::caption_vocabulary();  // so prompts written for the shapes model work here too
    g.text_vocab_size = static_cast<int>(m.text_vocab.size());
    g.cls_token_num = 16;
    g.caption_dim = 64;
  } else if (params.condition == "class") {
    g.condition = ConditionKind::Class;
    for (int i = 0; i < p.num_classes; ++i)
      m.classes.push_back(i < static_cast<int>(kClassNames.size()) ? kClassNames[i] : "class " + std::to_string(i));
    g.num_classes = p.num_classes;
    g.cls_token_num = 1;
  } else if (params.condition == "t5") {
    if (params.t5_dir.empty()) throw Error("a random T5-conditioned bundle needs the T5 folder it reads captions with (t5_dir)");
    const T5Folder t5 = open_t5_folder(params.t5_dir);
    g.condition = ConditionKind::Text;
    g.caption_source = CaptionSource::T5;
    g.cls_token_num = 120;  // LlamaGen's t5-feature-max-len
    g.caption_dim = t5.config.d_model;
    m.t5 = T5Reference{std::filesystem::absolute(params.t5_dir).lexically_normal().string(), t5_fingerprint(t5), true};
  } else {
    throw Error("unknown condition '" + params.condition + "' (allowed: text, class, t5)");
  }
  validate_config(g);
  validate_config(m.tokenizer);

  std::filesystem::create_directories(params.out_dir);
  const DType storage = params.fp16 ? DType::F16 : DType::F32;
  const std::map<std::string, std::string> meta = {{"speculum", "random weights, seed " + std::to_string(params.seed)}};
  save_tensors(params.out_dir + "/" + m.target_weights, random_weights(gpt_tensor_specs(g), params.seed), storage, meta);
  save_tensors(params.out_dir + "/" + m.tokenizer_weights,
               random_weights(vq_tensor_specs(m.tokenizer), params.seed + 1), storage, meta);
  if (params.drafters && g.caption_source == CaptionSource::T5)
    throw Error("random drafters for a T5-conditioned bundle are not written (train or import them); pass --no-drafters");
  if (params.drafters) {
    for (const auto& name : kDrafterNames) {
      const std::string file = "drafter-" + name + ".safetensors";
      const std::uint64_t seed = params.seed + (name == "eagle" ? 2 : 3);
      save_tensors(params.out_dir + "/" + file, random_weights(drafter_tensor_specs(g), seed), storage, meta);
      m.drafters[name] = {file, name};
    }
    m.ssd_heads = SpatialHeadsEntry{"ssd-heads.safetensors", std::min(5, g.grid_cols - 1), kMaxVerticalHeads};
    save_tensors(params.out_dir + "/" + m.ssd_heads->weights, random_weights(spatial_heads_tensor_specs(g, m.ssd_heads->horizontal, m.ssd_heads->vertical),
                                                    params.seed + 4), storage, meta);
    if (g.grid_rows % 2 == 0 && g.grid_cols % 2 == 0) {  // MuLo-SD's drafter at half the grid
      m.low_res_drafter = LowResDrafterEntry{"low-res-drafter.safetensors", g.grid_rows / 2, g.grid_cols / 2};
      save_tensors(params.out_dir + "/" + m.low_res_drafter->weights, random_weights(gpt_tensor_specs(m.low_res_config()), params.seed + 5),
                   storage, meta);
    }
    // Loose bounds, so soft acceptance happens on random models too (a trained bundle calibrates its own).
    m.soft_verification = SoftVerificationBounds{1.0, 1.0, 1.0, 3.0, 0.9, 0};
  }
  write_manifest(m, params.out_dir);
}

void create_random_t5_folder(const RandomT5Params& params) {
  T5Config c;
  if (params.preset == "tiny") {
    c.vocab_size = 300, c.d_model = 32, c.d_kv = 8, c.d_ff = 64, c.num_layers = 2, c.num_heads = 4;
  } else if (params.preset == "flan-t5-xl") {
    c.vocab_size = 32128, c.d_model = 2048, c.d_kv = 64, c.d_ff = 5120, c.num_layers = 24, c.num_heads = 32;
  } else {
    throw Error("unknown T5 preset '" + params.preset + "' (allowed: tiny, flan-t5-xl)");
  }
  if (params.out_dir.empty()) throw Error("create_random_t5_folder: no output folder given");
  namespace fs = std::filesystem;
  fs::create_directories(params.out_dir);
  fs::copy_file(params.spiece, params.out_dir + "/spiece.model", fs::copy_options::overwrite_existing);
  const nlohmann::json config = {{"architectures", {"T5EncoderModel"}}, {"model_type", "t5"}, {"vocab_size", c.vocab_size},
                                 {"d_model", c.d_model}, {"d_kv", c.d_kv}, {"d_ff", c.d_ff}, {"num_layers", c.num_layers},
                                 {"num_heads", c.num_heads}, {"relative_attention_num_buckets", 32},
                                 {"relative_attention_max_distance", 128}, {"layer_norm_epsilon", 1e-6},
                                 {"feed_forward_proj", "gated-gelu"}, {"torch_dtype", params.bf16 ? "bfloat16" : "float32"}};
  write_text_atomically(params.out_dir + "/config.json", config.dump(2) + "\n");
  save_tensors(params.out_dir + "/model.safetensors", random_weights(t5_encoder_tensor_specs(c), params.seed),
               params.bf16 ? DType::BF16 : DType::F32, {{"speculum", "random T5 encoder weights, seed " + std::to_string(params.seed)}});
}

}  // namespace speculum
