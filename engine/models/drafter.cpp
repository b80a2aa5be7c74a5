#include "models/drafter.h"

#include "error.h"

namespace speculum {

std::vector<TensorSpec> drafter_tensor_specs(const GptConfig& g) {
  const std::int64_t d = g.dim, f = g.ffn_hidden();
  return {{"fc.weight", {d, 2 * d}},
          {"fc.bias", {d}},
          {"layers.0.attention.wqkv.weight", {3 * d, d}},
          {"layers.0.attention.wo.weight", {d, d}},
          {"layers.0.feed_forward.w1.weight", {f, d}},
          {"layers.0.feed_forward.w2.weight", {d, f}},
          {"layers.0.feed_forward.w3.weight", {f, d}},
          {"layers.0.ffn_norm.weight", {d}}};
}

Drafter::Drafter(const Transformer& target, TensorMap weights) : target_(target), weights_(std::move(weights)) {
  for (const auto& spec : drafter_tensor_specs(target.config())) {
    const at::Tensor& t = find_tensor(weights_, spec.name, "drafter");
    if (t.sizes().vec() != spec.shape)
      throw Error("drafter tensor '" + spec.name + "' has shape " + shape_to_string(t.sizes().vec()) +
                  ", the target's width implies " + shape_to_string(spec.shape));
  }
  for (auto& [name, t] : weights_) t = t.to(target.device());
  layer_ = decoder_layer_weights(weights_, "layers.0.", "drafter", /*with_attention_norm=*/false);
}

KVCache Drafter::make_cache(int rows, int extra_slots) const {
  const GptConfig& g = target_.config();
  return KVCache(1, rows, g.n_head, g.head_dim(), g.image_tokens() + extra_slots,
                 at::TensorOptions().dtype(at::kFloat).device(target_.device()));
}

at::Tensor Drafter::fuse(const at::Tensor& tokens, const at::Tensor& features) const {
  const at::Tensor embedded = target_.token_embeddings(tokens);  // [..., N, dim]
  const at::Tensor e = embedded.dim() < features.dim() ? embedded.unsqueeze(0).expand_as(features) : embedded;
  return at::linear(at::cat({e, features.to(e.scalar_type())}, -1), weights_.at("fc.weight"), weights_.at("fc.bias"));
}

at::Tensor Drafter::forward(const at::Tensor& tokens, const at::Tensor& features,
                            const std::vector<std::int64_t>& positions, const at::Tensor& attend,
                            KVCache& cache) const {
  const int n = static_cast<int>(positions.size());
  if (tokens.numel() != n || features.size(1) != n || features.size(0) != cache.rows())
    throw Error("drafter: tokens, features [rows, N, dim] and positions disagree");
  const int begin = cache.append_slots(positions, {});
  try {
    const at::Tensor rope = target_.rope_rows(at::tensor(positions, at::kLong));
    return decoder_layer(fuse(tokens.to(target_.device()), features.to(target_.device())), layer_,
                         target_.config().n_head, target_.config().norm_eps, rope,
                         visibility_bias(cache, begin, n, attend, target_.device()), &cache, 0, begin);
  } catch (...) {
    cache.truncate(begin);
    throw;
  }
}

at::Tensor Drafter::forward_teacher(const at::Tensor& tokens, const at::Tensor& features) const {
  const GptConfig& g = target_.config();
  const auto n = tokens.size(1);
  const at::Tensor positions = at::arange(g.cls_token_num, g.cls_token_num + n, at::kLong);
  const at::Tensor causal = at::ones({n, n}, at::TensorOptions().dtype(at::kBool).device(target_.device())).tril();
  const at::Tensor bias =
      at::zeros({n, n}, at::TensorOptions().device(target_.device())).masked_fill(causal.logical_not(), kMaskedOut);
  return decoder_layer(fuse(tokens, features), layer_, g.n_head, g.norm_eps, target_.rope_rows(positions), bias,
                       nullptr, 0, 0);
}

}  // namespace speculum
