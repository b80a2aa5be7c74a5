// The EAGLE-style drafter (research/baselines-models.md A.2.1), beside the target it drafts for: the
// target's token embedding (frozen, shared), fc(cat(embedding, feature)), one decoder layer of the
// target's width without an input norm (2D RoPE at the same positions), then the target's own final norm
// and head. A feature is the target's last-block output before the final norm; the drafter predicts the
// next one. Input i pairs token x_i with the feature that predicted it (h_{i-1}); output i predicts h_i,
// whose head gives the distribution of x_{i+1}.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/blocks.h"
#include "models/kv_cache.h"
#include "models/model_config.h"
#include "models/tensor_io.h"
#include "models/transformer.h"

namespace speculum {

// Tensor names and shapes of a drafter for `target` (`fc.*`, `layers.0.*` in LlamaGen's layer names; LANTERN's
// drafters add their own `embed_tokens.weight`).
std::vector<TensorSpec> drafter_tensor_specs(const GptConfig& target, DrafterConvention convention = DrafterConvention::Speculum);

// DrafterConvention::Lantern follows LANTERN's released LlamaGen drafters exactly (checked against its code's
// outputs in tests/test_llamagen_t2i.cpp): features are the target's hidden states after its final norm, the
// output is the target's projection without a norm, and the first cls_token_num - 1 caption rows enter the
// drafter's context as token 0 with their features, which LANTERN's LlamaGen port computes for padding rows
// with an additive mask under which a padding row averages uniformly over earlier rows and every valid caption
// row (prefix_features).
class Drafter {
 public:
  // `weights` must hold every tensor of drafter_tensor_specs(target.config(), convention); they move to its device.
  // `norm_eps` 0: the target's; `rope_grid` > 0: a square RoPE grid of its own (LANTERN's drafters fix theirs from
  // input_type, whatever the target's), which must hold the target's tokens.
  // Its matrices run in `format`.
  Drafter(const Transformer& target, TensorMap weights, DrafterConvention convention = DrafterConvention::Speculum, double norm_eps = 0,
          int rope_grid = 0, WeightFormat format = WeightFormat::F32);

  const Transformer& target() const { return target_; }
  const TensorMap& weights() const { return weights_; }
  DrafterConvention convention() const { return convention_; }
  // A cache over image positions (and, for LANTERN, the caption rows before them); `extra_slots` for trees.
  KVCache make_cache(int rows, int extra_slots) const;

  // The drafter's feature of target hidden states (the last block's output) [..., dim].
  at::Tensor feature(const at::Tensor& hidden) const;
  // Logits [..., vocab] float32 of predicted features.
  at::Tensor logits(const at::Tensor& predicted) const;
  // Caption rows that enter the drafter's context before the first image token (LANTERN: cls_token_num - 1).
  int prefix_rows() const;
  // LANTERN: the features of the condition prefix's rows [rows, cls_token_num, dim], as LANTERN's base computes them.
  at::Tensor prefix_features(const ConditionPrefix& prefix) const;
  // Appends the prefix rows (token 0, features [rows, prefix_rows(), dim]) to `cache` (LANTERN only).
  void read_prefix(const at::Tensor& features, KVCache& cache) const;

  // Appends N inputs to `cache`: `tokens` [N], `features` [rows, N, dim] (the feature that predicted each
  // token), RoPE `positions` [N] (cls_token_num + raster), `attend` [N, N] bool among them (default causal).
  // Returns the predicted features [rows, N, dim].
  at::Tensor forward(const at::Tensor& tokens, const at::Tensor& features, const std::vector<std::int64_t>& positions,
                     const at::Tensor& attend, KVCache& cache) const;

  // Training: tokens [B, N], features [B, N, dim] (feature i predicted token i), image i at raster i.
  // Causal over the sequence, no cache; returns predicted features [B, N, dim] (output i predicts feature i + 1).
  at::Tensor forward_teacher(const at::Tensor& tokens, const at::Tensor& features) const;

 private:
  at::Tensor fuse(const at::Tensor& tokens, const at::Tensor& features) const;

  const Transformer& target_;
  TensorMap weights_;
  DecoderLayer layer_;
  LinearWeight fc_;
  at::Tensor rope_rows(const std::vector<std::int64_t>& positions) const;

  DrafterConvention convention_;
  double norm_eps_;
  at::Tensor rope_table_;  // its own RoPE table, when rope_grid was given
};

}  // namespace speculum
