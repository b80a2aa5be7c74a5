#include "models/spatial_heads.h"

#include "error.h"
#include "models/blocks.h"

namespace speculum {

const char* spatial_direction_name(SpatialDirection direction) {
  return direction == SpatialDirection::Horizontal ? "horizontal" : "vertical";
}

std::string spatial_head_prefix(SpatialDirection direction, int delta) {
  return std::string(spatial_direction_name(direction)) + "." + std::to_string(delta - 1) + ".";
}

std::vector<TensorSpec> spatial_heads_tensor_specs(const GptConfig& target, int horizontal, int vertical) {
  const std::int64_t d = target.dim;
  std::vector<TensorSpec> specs;
  for (const auto& [direction, count] : {std::pair{SpatialDirection::Horizontal, horizontal}, {SpatialDirection::Vertical, vertical}})
    for (int delta = 1; delta <= count; ++delta) {
      const std::string p = spatial_head_prefix(direction, delta);
      specs.push_back({p + "w0.weight", {d, 2 * d}});
      specs.push_back({p + "norm.weight", {d}});
      specs.push_back({p + "w1.weight", {d, d}});
      specs.push_back({p + "w3.weight", {d, d}});
      specs.push_back({p + "w2.weight", {d, d}});
    }
  return specs;
}

SpatialHeads::SpatialHeads(const Transformer& target, TensorMap weights, int horizontal, int vertical, WeightFormat format)
    : target_(target), weights_(std::move(weights)), horizontal_(horizontal), vertical_(vertical) {
  if (horizontal < 1 || vertical < 1) throw Error("SSD needs at least one horizontal and one vertical head");
  for (const auto& spec : spatial_heads_tensor_specs(target.config(), horizontal, vertical)) {
    const at::Tensor& t = find_tensor(weights_, spec.name, "SSD heads");
    if (t.sizes().vec() != spec.shape)
      throw Error("SSD head tensor '" + spec.name + "' has shape " + shape_to_string(t.sizes().vec()) +
                  ", the target's width implies " + shape_to_string(spec.shape));
  }
  for (auto& [name, t] : weights_) t = t.to(target.device());
  for (const auto& spec : spatial_heads_tensor_specs(target.config(), horizontal, vertical))
    if (spec.shape.size() == 2) matrices_[spec.name] = make_linear_weight(weights_.at(spec.name), format);
}

at::Tensor SpatialHeads::predict(SpatialDirection direction, int delta, const at::Tensor& features,
                                 const at::Tensor& tokens) const {
  if (delta < 1 || delta > heads(direction))
    throw Error(std::string("no ") + spatial_direction_name(direction) + " SSD head for offset " + std::to_string(delta) +
                " (the bundle has " + std::to_string(heads(direction)) + ")");
  const std::string p = spatial_head_prefix(direction, delta);
  at::Tensor e = target_.token_embeddings(tokens);
  while (e.dim() < features.dim()) e = e.unsqueeze(0);
  e = e.expand_as(features);  // one token row for every CFG row
  const at::Tensor z = linear(at::cat({features.to(e.scalar_type()), e}, -1), matrices_.at(p + "w0.weight"));
  const at::Tensor normed = rms_norm(z, weights_.at(p + "norm.weight"), target_.config().norm_eps).to(z.scalar_type());
  return z + swiglu(normed, matrices_.at(p + "w1.weight"), matrices_.at(p + "w3.weight"), matrices_.at(p + "w2.weight"));
}

}  // namespace speculum
