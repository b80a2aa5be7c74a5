// The LlamaGen GPT (research/baselines-models.md B.1): pre-norm blocks with RMSNorm, fused wqkv,
// 2D RoPE, SwiGLU; class or caption prefix. Attention takes explicit position ids and an explicit
// visibility mask over the KV cache, so one forward serves AR steps, trees, Jacobi windows and rows.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "models/blocks.h"
#include "models/kv_cache.h"
#include "models/model_config.h"
#include "models/tensor_io.h"

namespace speculum {

struct ForwardInput {
  at::Tensor tokens;      // [N] int64 image tokens, shared by every CFG row; or
  at::Tensor embeddings;  // [rows, N, dim] input embeddings (the condition prefix)
  std::vector<std::int64_t> positions;  // RoPE row of each new token: cls_token_num + raster index
  // Optional [N, N] bool: may new token i attend to new token j. Default: causal (j <= i).
  at::Tensor attend;
  // Optional per new slot: may later queries attend to it (false for padded caption words).
  std::vector<char> attendable;
  int logits_last = -1;      // logits only for the last n new positions; -1: all
  bool want_hidden = false;  // return the last block's output (before the final norm)
};

struct ForwardOutput {
  at::Tensor logits;  // [rows, n, vocab] float32
  at::Tensor hidden;  // [rows, N, dim] when requested
};

// The condition prefix for the CFG rows: row 0 conditional, row 1 (if any) the null condition.
struct ConditionPrefix {
  at::Tensor embeddings;        // [rows, cls_token_num, dim]
  std::vector<char> attendable;  // [cls_token_num]
};

class Transformer {
 public:
  // The decoder layers' matrices and the output head run in `format`; in any other format than F32 the
  // float32 originals of those matrices are dropped from weights() and make_cache's caches store float16.
  Transformer(GptConfig config, TensorMap weights, at::Device device, WeightFormat format = WeightFormat::F32);

  const GptConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  const TensorMap& weights() const { return weights_; }

  KVCache make_cache(int rows, int extra_slots) const;

  // Appends the N new tokens to `cache` (rolled back if the pass throws) and returns their logits.
  ForwardOutput forward(const ForwardInput& input, KVCache& cache) const;

  // Teacher forcing for training: one pass over [prefix ; tokens[:, :-1]] with a causal mask and each
  // row's own prefix padding (`prefix_attendable` [B, L] bool). Returns logits [B, N, V] where row b,
  // column i predicts tokens[b, i].
  at::Tensor forward_teacher(const at::Tensor& prefix_embeddings, const at::Tensor& prefix_attendable,
                             const at::Tensor& tokens) const;
  // The same pass, returning the last block's output (before the final norm) [B, N, dim]: column i is
  // the feature whose head() gives the distribution of tokens[b, i] (the drafters' input and target).
  at::Tensor forward_teacher_hidden(const at::Tensor& prefix_embeddings, const at::Tensor& prefix_attendable,
                                    const at::Tensor& tokens) const;
  // The blocks over input embeddings x [rows, N, dim] at RoPE rows `positions` [N], without a cache, under an
  // additive attention `bias` broadcasting to [rows, heads, N, N]: the last block's output [rows, N, dim].
  at::Tensor hidden_uncached(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& bias) const;
  // Final norm and output head: features [..., dim] -> logits [..., vocab] float32.
  at::Tensor head(const at::Tensor& hidden) const;
  // The final norm alone, in hidden's dtype, and the output head's matrix.
  at::Tensor final_norm(const at::Tensor& hidden) const;
  const LinearWeight& output_weight() const { return output_; }
  // Bytes of weights one decode step reads: every layer's matrices and the output head, in their format.
  std::int64_t decode_step_weight_bytes() const;
  // Token embeddings [..., dim] of image tokens [...] (without cell positions).
  at::Tensor token_embeddings(const at::Tensor& tokens) const;
  // 2D RoPE rows of RoPE positions [N] int64 -> [N, hd/2, 2].
  at::Tensor rope_rows(const at::Tensor& positions) const;
  // Caption prefixes for a training batch: [B, L, dim] embeddings and [B, L] attendable; rows with
  // `null_caption[b]` get the learned null caption (classifier-free guidance dropout) under the same mask.
  std::pair<at::Tensor, at::Tensor> caption_batch(const std::vector<std::vector<int>>& word_ids,
                                                  const std::vector<bool>& null_caption) const;

  // The same for a model that reads T5 features: each row's encoded caption [cls_token_num, caption_dim] (left-padded
  // with zero rows) and its slots; dropped rows get the learned null caption under the same slots, as generation
  // pairs them (caption_prefix).
  std::pair<at::Tensor, at::Tensor> encoded_caption_batch(const std::vector<at::Tensor>& features,
                                                          const std::vector<std::vector<char>>& slots,
                                                          const std::vector<bool>& null_caption) const;

  // Class prefixes for a training batch, as caption_batch: [B, 1, dim] embeddings and [B, 1] attendable; rows with
  // `null_class[b]` get the null class (the CFG row), which the model must have.
  std::pair<at::Tensor, at::Tensor> class_batch(const std::vector<int>& class_ids, const std::vector<bool>& null_class) const;

  ConditionPrefix class_prefix(int class_id, int rows) const;
  // `word_ids` are text-vocabulary ids, at most cls_token_num of them; they are left-padded.
  ConditionPrefix text_prefix(const std::vector<int>& word_ids, int rows) const;
  // The prefix from caption features already encoded: `features` [cls_token_num, caption_dim], left-padded with
  // zero rows, `slots` marking the rows that hold a token. Row 1 (with CFG) is the learned null caption under the
  // same slots, as LlamaGen's generate() pairs them.
  ConditionPrefix caption_prefix(const at::Tensor& features, std::vector<char> slots, int rows) const;

  // Positions of the prefix slots (all zero rows of the RoPE table).
  std::vector<std::int64_t> prefix_positions() const;

 private:
  // The blocks over x [rows, N, dim]; with a cache, keys and values go to slots [begin, begin + N) and
  // attention spans the cache, else it spans x itself. `bias` broadcasts to [rows, heads, N, keys].
  at::Tensor run_blocks(at::Tensor x, const at::Tensor& rope, const at::Tensor& bias, KVCache* cache, int begin) const;
  // Token embeddings [B, N, dim] of `tokens` [B, N] at RoPE rows `positions` ([N] int64, all past the
  // prefix), plus their cells' learned position embeddings when the model has them.
  at::Tensor image_embeddings(const at::Tensor& tokens, const at::Tensor& positions) const;
  at::Tensor caption_features(const std::vector<int>& word_ids) const;  // [L, caption_dim], left-padded
  std::vector<char> caption_slots(int words) const;                    // [L]: which slots hold a word
  at::Tensor project_caption(const at::Tensor& features) const;         // [B, L, caption_dim] -> [B, L, dim]

  GptConfig config_;
  TensorMap weights_;
  at::Device device_;
  at::ScalarType cache_dtype_;
  std::vector<DecoderLayer> layers_;
  LinearWeight output_;
  at::Tensor rope_table_;
};

}  // namespace speculum
