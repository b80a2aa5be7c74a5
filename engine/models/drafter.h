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

// Tensor names and shapes of a drafter for `target` (`fc.*`, `layers.0.*` in LlamaGen's layer names).
std::vector<TensorSpec> drafter_tensor_specs(const GptConfig& target);

class Drafter {
 public:
  // `weights` must hold every tensor of drafter_tensor_specs(target.config()); they move to its device.
  Drafter(const Transformer& target, TensorMap weights);

  const Transformer& target() const { return target_; }
  const TensorMap& weights() const { return weights_; }
  // A cache over image positions only (the features already carry the condition); `extra_slots` for trees.
  KVCache make_cache(int rows, int extra_slots) const;

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
};

}  // namespace speculum
