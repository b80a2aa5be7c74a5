#include "models/model_config.h"

#include "error.h"

namespace speculum {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(message);
}

}  // namespace

int GptConfig::ffn_hidden() const {
  if (ffn_dim > 0) return ffn_dim;
  const int hidden = 2 * 4 * dim / 3;
  return (hidden + 255) / 256 * 256;
}

namespace {

// One pre-norm block of LlamaGen's layout: fused wqkv, wo, SwiGLU w1/w3/w2, two RMSNorms.
void add_block(std::vector<TensorSpec>& specs, const std::string& p, std::int64_t width, std::int64_t ffn) {
  specs.push_back({p + "attention.wqkv.weight", {3 * width, width}});
  specs.push_back({p + "attention.wo.weight", {width, width}});
  specs.push_back({p + "feed_forward.w1.weight", {ffn, width}});
  specs.push_back({p + "feed_forward.w3.weight", {ffn, width}});
  specs.push_back({p + "feed_forward.w2.weight", {width, ffn}});
  specs.push_back({p + "attention_norm.weight", {width}});
  specs.push_back({p + "ffn_norm.weight", {width}});
}

}  // namespace

std::vector<TensorSpec> gpt_tensor_specs(const GptConfig& c) {
  const std::int64_t d = c.dim, f = c.ffn_hidden();
  std::vector<TensorSpec> specs;
  if (c.condition == ConditionKind::Class) {
    specs.push_back({"cls_embedding.embedding_table.weight", {c.num_classes + (c.class_null_row ? 1 : 0), d}});
  } else {
    if (c.caption_source == CaptionSource::Words)
      specs.push_back({"text_encoder.word_embeddings.weight", {c.text_vocab_size, c.caption_dim}});
    specs.push_back({"cls_embedding.cap_proj.fc1.weight", {d, c.caption_dim}});
    specs.push_back({"cls_embedding.cap_proj.fc2.weight", {d, d}});
    specs.push_back({"cls_embedding.uncond_embedding", {c.cls_token_num, c.caption_dim}});
    if (c.text_encoder_layers > 0) {
      specs.push_back({"text_encoder.position_embeddings.weight", {c.cls_token_num, c.caption_dim}});
      for (int i = 0; i < c.text_encoder_layers; ++i)
        add_block(specs, "text_encoder.layers." + std::to_string(i) + ".", c.caption_dim, c.text_ffn_hidden());
    }
  }
  specs.push_back({"tok_embeddings.weight", {c.vocab_size, d}});
  if (c.image_positions) specs.push_back({"pos_embeddings.weight", {c.image_tokens(), d}});
  for (int i = 0; i < c.n_layer; ++i) add_block(specs, "layers." + std::to_string(i) + ".", d, f);
  specs.push_back({"norm.weight", {d}});
  specs.push_back({"output.weight", {c.vocab_size, d}});
  return specs;
}

namespace {

void add_conv(std::vector<TensorSpec>& specs, const std::string& name, int in, int out, int k) {
  specs.push_back({name + ".weight", {out, in, k, k}});
  specs.push_back({name + ".bias", {out}});
}

void add_norm(std::vector<TensorSpec>& specs, const std::string& name, int channels) {
  specs.push_back({name + ".weight", {channels}});
  specs.push_back({name + ".bias", {channels}});
}

void add_resnet(std::vector<TensorSpec>& specs, const std::string& name, int in, int out) {
  add_norm(specs, name + ".norm1", in);
  add_conv(specs, name + ".conv1", in, out, 3);
  add_norm(specs, name + ".norm2", out);
  add_conv(specs, name + ".conv2", out, out, 3);
  if (in != out) add_conv(specs, name + ".nin_shortcut", in, out, 1);
}

void add_attn(std::vector<TensorSpec>& specs, const std::string& name, int channels) {
  add_norm(specs, name + ".norm", channels);
  for (const char* part : {".q", ".k", ".v", ".proj_out"}) add_conv(specs, name + part, channels, channels, 1);
}

void add_mid(std::vector<TensorSpec>& specs, const std::string& prefix, int channels) {
  add_resnet(specs, prefix + ".mid.0", channels, channels);
  add_attn(specs, prefix + ".mid.1", channels);
  add_resnet(specs, prefix + ".mid.2", channels, channels);
}

}  // namespace

std::vector<TensorSpec> vq_tensor_specs(const VqConfig& c) {
  std::vector<TensorSpec> specs;
  const int levels = static_cast<int>(c.ch_mult.size());
  if (c.has_encoder) {
    add_conv(specs, "encoder.conv_in", 3, c.ch, 3);
    int block_in = c.ch;
    for (int level = 0; level < levels; ++level) {
      const std::string p = "encoder.conv_blocks." + std::to_string(level);
      const int block_out = c.ch * c.ch_mult[level];
      for (int j = 0; j < c.num_res_blocks; ++j) {
        add_resnet(specs, p + ".res." + std::to_string(j), block_in, block_out);
        block_in = block_out;
        if (level == levels - 1) add_attn(specs, p + ".attn." + std::to_string(j), block_in);
      }
      if (level != levels - 1) add_conv(specs, p + ".downsample.conv", block_in, block_in, 3);
    }
    add_mid(specs, "encoder", block_in);
    add_norm(specs, "encoder.norm_out", block_in);
    add_conv(specs, "encoder.conv_out", block_in, c.z_channels, 3);
    add_conv(specs, "quant_conv", c.z_channels, c.codebook_dim, 1);
  }
  specs.push_back({"quantize.embedding.weight", {c.codebook_size, c.codebook_dim}});
  add_conv(specs, "post_quant_conv", c.codebook_dim, c.z_channels, 1);
  int block_in = c.ch * c.ch_mult.back();
  add_conv(specs, "decoder.conv_in", c.z_channels, block_in, 3);
  add_mid(specs, "decoder", block_in);
  for (int level = 0; level < levels; ++level) {
    const std::string p = "decoder.conv_blocks." + std::to_string(level);
    const int block_out = c.ch * c.ch_mult[levels - 1 - level];
    for (int j = 0; j < c.num_res_blocks + 1; ++j) {
      add_resnet(specs, p + ".res." + std::to_string(j), block_in, block_out);
      block_in = block_out;
      if (level == 0) add_attn(specs, p + ".attn." + std::to_string(j), block_in);
    }
    if (level != levels - 1) add_conv(specs, p + ".upsample.conv", block_in, block_in, 3);
  }
  add_norm(specs, "decoder.norm_out", block_in);
  add_conv(specs, "decoder.conv_out", block_in, 3, 3);
  return specs;
}

std::int64_t parameter_count(const std::vector<TensorSpec>& specs) {
  std::int64_t total = 0;
  for (const auto& s : specs) {
    std::int64_t n = 1;
    for (auto d : s.shape) n *= d;
    total += n;
  }
  return total;
}

void validate_config(const GptConfig& c) {
  require(c.dim > 0 && c.n_layer > 0 && c.n_head > 0, "target: dim, n_layer and n_head must be positive");
  require(c.dim % c.n_head == 0, "target: dim " + std::to_string(c.dim) + " is not divisible by n_head " +
                                     std::to_string(c.n_head));
  require(c.head_dim() % 4 == 0, "target: head_dim (dim / n_head = " + std::to_string(c.head_dim()) +
                                     ") must be a multiple of 4 for 2D RoPE");
  require(c.vocab_size > 1, "target: vocab_size must be > 1");
  require(c.grid_rows > 0 && c.grid_cols > 0, "target: grid must be positive");
  require(c.cls_token_num > 0, "target: cls_token_num must be positive");
  require(c.rope_base > 1, "target: rope_base must be > 1");
  require(c.norm_eps > 0, "target: norm_eps must be > 0");
  if (c.condition == ConditionKind::Class) {
    require(c.num_classes > 0, "target: num_classes must be positive for class conditioning");
  } else {
    require(c.caption_dim > 0, "target: caption_dim must be positive for text conditioning");
    require(c.caption_source == CaptionSource::T5 || c.text_vocab_size > 0, "target: the text vocabulary is empty");
    require(c.text_encoder_layers >= 0, "target: text_encoder_layers must be >= 0");
    require(c.caption_source == CaptionSource::Words || c.text_encoder_layers == 0,
            "target: a T5-conditioned model has no caption blocks of its own (text_encoder_layers must be 0)");
    require(c.text_encoder_layers == 0 || (c.caption_dim % GptConfig::kTextHeadDim == 0),
            "target: caption_dim " + std::to_string(c.caption_dim) + " must be a multiple of " +
                std::to_string(GptConfig::kTextHeadDim) + " (the text encoder's head size) when text_encoder_layers > 0");
  }
}

void validate_config(const VqConfig& c) {
  require(c.codebook_size > 1 && c.codebook_dim > 0, "tokenizer: codebook_size and codebook_dim must be positive");
  require(c.z_channels > 0 && c.ch > 0 && c.num_res_blocks > 0, "tokenizer: z_channels, ch, num_res_blocks must be positive");
  require(!c.ch_mult.empty() && c.ch_mult.size() <= 6, "tokenizer: ch_mult needs 1 to 6 levels");
  require(c.norm_groups > 0, "tokenizer: norm_groups must be positive");
  for (int m : c.ch_mult) {
    require(m > 0, "tokenizer: ch_mult entries must be positive");
    require((c.ch * m) % c.norm_groups == 0, "tokenizer: channel count " + std::to_string(c.ch * m) +
                                                 " (ch * ch_mult) is not divisible by norm_groups " +
                                                 std::to_string(c.norm_groups));
  }
}

WeightFormat parse_weight_format(const std::string& name) {
  if (name == "f32") return WeightFormat::F32;
  if (name == "f16") return WeightFormat::F16;
  if (name == "bf16") return WeightFormat::BF16;
  if (name == "q8") return WeightFormat::Q8;
  throw Error("weight format '" + name + "' is not one of f32, f16, bf16, q8");
}

std::string weight_format_name(WeightFormat format) {
  switch (format) {
    case WeightFormat::F32: return "f32";
    case WeightFormat::F16: return "f16";
    case WeightFormat::BF16: return "bf16";
    case WeightFormat::Q8: return "q8";
  }
  return "f32";
}

}  // namespace speculum
