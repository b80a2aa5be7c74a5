// SSD's spatial heads (research/seed-methods.md §3.2), beside the frozen target they draft for. Head
// (direction, δ) maps the feature h of a cell (the target's last-block output before the final norm whose
// head gives that cell's distribution) and the embedding e of the token drawn there to a prediction of
// the feature δ cells to the right (horizontal) or δ rows below (vertical):
//   z = W₀ [h ; e],   ĥ = z + SwiGLU(RMSNorm(z)).
// A head's draft distribution is the target's own final norm and output head applied to ĥ. Each offset
// has its own head (Medusa-style, not chained).
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "models/linear.h"
#include "models/model_config.h"
#include "models/tensor_io.h"
#include "models/transformer.h"

namespace speculum {

enum class SpatialDirection { Horizontal, Vertical };

// `horizontal.<δ-1>.*` and `vertical.<δ-1>.*`: w0 [dim, 2·dim], norm [dim], w1, w3 [dim, dim], w2 [dim, dim].
std::vector<TensorSpec> spatial_heads_tensor_specs(const GptConfig& target, int horizontal, int vertical);

class SpatialHeads {
 public:
  // `weights` must hold every tensor of the specs for these head counts; they move to the target's device, the
  // matrices in `format`.
  SpatialHeads(const Transformer& target, TensorMap weights, int horizontal, int vertical, WeightFormat format = WeightFormat::F32);

  const Transformer& target() const { return target_; }
  const TensorMap& weights() const { return weights_; }
  int heads(SpatialDirection direction) const {
    return direction == SpatialDirection::Horizontal ? horizontal_ : vertical_;
  }

  // Predicted features [..., dim] at offset `delta` (1-based) from cells with `features` [..., dim] and the
  // tokens drawn there, `tokens` [...] (broadcast over leading CFG rows when it has fewer dimensions).
  at::Tensor predict(SpatialDirection direction, int delta, const at::Tensor& features, const at::Tensor& tokens) const;

 private:
  const Transformer& target_;
  TensorMap weights_;
  std::map<std::string, LinearWeight> matrices_;  // w0, w1, w3, w2 of every head, by tensor name
  int horizontal_;
  int vertical_;
};

// "horizontal" / "vertical" and the head's name prefix ("horizontal.0." for δ = 1).
const char* spatial_direction_name(SpatialDirection direction);
std::string spatial_head_prefix(SpatialDirection direction, int delta);

}  // namespace speculum
