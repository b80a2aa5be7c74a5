#include "models/text_encoder.h"

#include <cmath>
#include <string>

#include "models/blocks.h"

namespace speculum {
namespace {

const at::Tensor& tensor(const TensorMap& weights, const std::string& name) { return find_tensor(weights, name, "target"); }
// Run once per prompt and trained with the target: f32, shared with the map.
LinearWeight matrix(const TensorMap& weights, const std::string& name) { return make_linear_weight(tensor(weights, name), WeightFormat::F32); }

}  // namespace

at::Tensor encode_caption(const GptConfig& config, const TensorMap& weights, const at::Tensor& features, const at::Tensor& words) {
  if (config.text_encoder_layers == 0) return features;
  const auto b = features.size(0), l = features.size(1);
  const int heads = config.text_heads(), hd = GptConfig::kTextHeadDim;
  const at::Tensor present = words.to(features.device(), at::kBool);
  const at::Tensor order = (at::cumsum(present.to(at::kLong), 1) - 1).clamp_min(0);  // [B, L]
  at::Tensor x = features + tensor(weights, "text_encoder.position_embeddings.weight").index_select(0, order.reshape({-1})).reshape({b, l, -1}).to(features.scalar_type());
  // Keys are the caption's words; a padded slot (or an empty caption) still sees itself, so no row is all -inf.
  const at::Tensor visible = present.unsqueeze(1).expand({b, l, l}) | at::eye(l, present.options()).unsqueeze(0);
  const at::Tensor bias = at::zeros({b, 1, l, l}, features.options().dtype(at::kFloat)).masked_fill(visible.logical_not().unsqueeze(1), kMaskedOut);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  for (int i = 0; i < config.text_encoder_layers; ++i) {
    const std::string p = "text_encoder.layers." + std::to_string(i) + ".";
    const at::Tensor qkv = linear(rms_norm(x, tensor(weights, p + "attention_norm.weight"), config.norm_eps),
                                  matrix(weights, p + "attention.wqkv.weight"))
                               .reshape({b, l, 3, heads, hd})
                               .permute({2, 0, 3, 1, 4});  // [3, B, heads, L, hd]
    const at::Tensor attn = at::matmul(at::softmax(at::matmul(qkv[0], qkv[1].transpose(2, 3)) * scale + bias, -1), qkv[2]);
    x = x + linear(attn.transpose(1, 2).reshape({b, l, -1}), matrix(weights, p + "attention.wo.weight"));
    x = x + swiglu(rms_norm(x, tensor(weights, p + "ffn_norm.weight"), config.norm_eps), matrix(weights, p + "feed_forward.w1.weight"),
                   matrix(weights, p + "feed_forward.w3.weight"), matrix(weights, p + "feed_forward.w2.weight"));
  }
  return x;
}

}  // namespace speculum
