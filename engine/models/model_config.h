// Architecture configurations read from a bundle manifest, and the tensor names and shapes they imply
// (LlamaGen's state-dict layout, research/baselines-models.md B.1.8 and B.2.3). Plain C++, no LibTorch,
// so a bundle can be validated before any weight is loaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace speculum {

enum class ConditionKind { Class, Text };
// Where a text model's caption features come from: its own word table (and caption blocks), or an outside T5
// encoder whose left-padded output the caller passes in (LlamaGen T2I).
enum class CaptionSource { Words, T5 };

// The LlamaGen GPT. Class conditioning: one prefix token from `cls_embedding.embedding_table` (row
// `num_classes` is the CFG null class). Text conditioning: `cls_token_num` left-padded word features of
// `caption_dim` through LlamaGen's `cap_proj` MLP, with `uncond_embedding` as the null caption.
// LlamaGen's prefix slots have all-zero RoPE rows, so their queries and keys are zero: every token weighs
// the caption slots alike and cannot pick out a word, and word order survives only as the running means
// of causal uniform attention. The words must arrive already contextual (T5 in LlamaGen); `text_encoder_layers`
// bidirectional blocks over the words (plus word-order embeddings) play T5's part; 0 keeps the bare word
// embeddings. `image_positions` adds a learned embedding per grid cell to the image tokens, since 2D RoPE
// alone only tells a token where others are relative to it, not where the image's edges are.
struct GptConfig {
  int dim = 256;
  int n_layer = 4;
  int n_head = 4;
  int ffn_dim = 0;  // 0: LlamaGen's rule, find_multiple(int(2 * 4 * dim / 3), 256)
  int vocab_size = 1024;
  int grid_rows = 16;
  int grid_cols = 16;
  double rope_base = 10000.0;
  double norm_eps = 1e-5;
  ConditionKind condition = ConditionKind::Class;
  int num_classes = 10;     // class conditioning
  bool class_null_row = true;  // class conditioning: row num_classes is the CFG null class (trained with class
                               // dropout, as LlamaGen); without it the model has no unconditional branch
  int cls_token_num = 1;    // prefix length: 1 for classes, max caption words for text
  int caption_dim = 64;     // text conditioning: width of the word features
  int text_vocab_size = 0;  // text conditioning: rows of `text_encoder.word_embeddings.weight`
  int text_encoder_layers = 0;  // text conditioning: contextual blocks over the words (0 = none)
  CaptionSource caption_source = CaptionSource::Words;
  bool image_positions = false;  // `pos_embeddings.weight`: a learned embedding per grid cell

  int head_dim() const { return dim / n_head; }
  int ffn_hidden() const;
  int image_tokens() const { return grid_rows * grid_cols; }
  int max_positions() const { return cls_token_num + image_tokens(); }
  int text_heads() const { return caption_dim / kTextHeadDim; }
  int text_ffn_hidden() const { return 2 * caption_dim; }

  static constexpr int kTextHeadDim = 32;
  friend bool operator==(const GptConfig&, const GptConfig&) = default;
};

// The LlamaGen VQ tokenizer (encoder, L2-normalised codebook, decoder) at any size.
struct VqConfig {
  int codebook_size = 1024;
  int codebook_dim = 8;
  int z_channels = 64;
  int ch = 32;
  std::vector<int> ch_mult = {1, 2, 2};  // len - 1 down/up-samplings
  int num_res_blocks = 1;                 // encoder; the decoder has one more per level, as in LlamaGen
  int norm_groups = 32;                   // GroupNorm groups (LlamaGen: 32)
  bool has_encoder = true;

  int downsample_factor() const { return 1 << (static_cast<int>(ch_mult.size()) - 1); }
};

// How an EAGLE-style drafter meets its target. Speculum: features before the target's final norm, the target's
// token embedding and head (norm + output). Lantern (LANTERN's released drafters): features after the final norm,
// an embedding of its own, the output projection alone, and the caption rows in its context (models/drafter.h).
enum class DrafterConvention { Speculum, Lantern };

// How a model's matrices are held for inference (models/linear.h): float32, float16, bfloat16, or 8-bit with a
// float32 scale per 32 weights. Training is always float32.
enum class WeightFormat { F32, F16, BF16, Q8 };
// "f32", "f16", "bf16", "q8"; parse throws Error naming the allowed values.
WeightFormat parse_weight_format(const std::string& name);
std::string weight_format_name(WeightFormat format);

struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> shape;
};

std::vector<TensorSpec> gpt_tensor_specs(const GptConfig& config);
std::vector<TensorSpec> vq_tensor_specs(const VqConfig& config);
std::int64_t parameter_count(const std::vector<TensorSpec>& specs);

// Throws speculum::Error naming the field when a configuration cannot describe a working model.
void validate_config(const GptConfig& config);
void validate_config(const VqConfig& config);

}  // namespace speculum
