#include "models/drafter.h"

#include "error.h"
#include "models/rope.h"

namespace speculum {

std::vector<TensorSpec> drafter_tensor_specs(const GptConfig& g, DrafterConvention convention) {
  const std::int64_t d = g.dim, f = g.ffn_hidden();
  std::vector<TensorSpec> specs;
  if (convention == DrafterConvention::Lantern) specs.push_back({"embed_tokens.weight", {g.vocab_size, d}});
  const std::vector<TensorSpec> layer = {{"fc.weight", {d, 2 * d}},
          {"fc.bias", {d}},
          {"layers.0.attention.wqkv.weight", {3 * d, d}},
          {"layers.0.attention.wo.weight", {d, d}},
          {"layers.0.feed_forward.w1.weight", {f, d}},
          {"layers.0.feed_forward.w2.weight", {d, f}},
          {"layers.0.feed_forward.w3.weight", {f, d}},
          {"layers.0.ffn_norm.weight", {d}}};
  specs.insert(specs.end(), layer.begin(), layer.end());
  return specs;
}

Drafter::Drafter(const Transformer& target, TensorMap weights, DrafterConvention convention, double norm_eps, int rope_grid,
                 WeightFormat format)
    : target_(target), weights_(std::move(weights)), convention_(convention), norm_eps_(norm_eps > 0 ? norm_eps : target.config().norm_eps) {
  const GptConfig& g = target.config();
  if (rope_grid > 0) {
    if (rope_grid * rope_grid < g.image_tokens())
      throw Error("the drafter's RoPE grid " + std::to_string(rope_grid) + "x" + std::to_string(rope_grid) + " holds fewer tokens than the target's " +
                  std::to_string(g.grid_rows) + "x" + std::to_string(g.grid_cols) + " grid");
    rope_table_ = rope_table_2d(rope_grid, rope_grid, g.head_dim(), g.rope_base, g.cls_token_num).to(target.device());
  }
  if (convention_ == DrafterConvention::Lantern && target.config().caption_source != CaptionSource::T5)
    throw Error("a LANTERN drafter drafts for a LlamaGen text-to-image target; this target is not one");
  for (const auto& spec : drafter_tensor_specs(target.config(), convention_)) {
    const at::Tensor& t = find_tensor(weights_, spec.name, "drafter");
    if (t.sizes().vec() != spec.shape)
      throw Error("drafter tensor '" + spec.name + "' has shape " + shape_to_string(t.sizes().vec()) +
                  ", the target's width implies " + shape_to_string(spec.shape));
  }
  for (auto& [name, t] : weights_) t = t.to(target.device());
  layer_ = decoder_layer_weights(weights_, "layers.0.", "drafter", /*with_attention_norm=*/false, format);
  fc_ = make_linear_weight(weights_.at("fc.weight"), format);
}

KVCache Drafter::make_cache(int rows, int extra_slots) const {
  const GptConfig& g = target_.config();
  return KVCache(1, rows, g.n_head, g.head_dim(), prefix_rows() + g.image_tokens() + extra_slots,
                 at::TensorOptions().dtype(at::kFloat).device(target_.device()));
}

at::Tensor Drafter::rope_rows(const std::vector<std::int64_t>& positions) const {
  const at::Tensor index = at::tensor(positions, at::kLong);
  return rope_table_.defined() ? rope_table_.index_select(0, index.to(rope_table_.device())) : target_.rope_rows(index);
}

int Drafter::prefix_rows() const { return convention_ == DrafterConvention::Lantern ? target_.config().cls_token_num - 1 : 0; }

at::Tensor Drafter::feature(const at::Tensor& hidden) const {
  if (convention_ == DrafterConvention::Speculum) return hidden;
  return target_.final_norm(hidden);
}

at::Tensor Drafter::logits(const at::Tensor& predicted) const {
  if (convention_ == DrafterConvention::Speculum) return target_.head(predicted);
  return linear(predicted, target_.output_weight()).to(at::kFloat);
}

at::Tensor Drafter::prefix_features(const ConditionPrefix& prefix) const {
  if (convention_ != DrafterConvention::Lantern) throw Error("prefix_features: only LANTERN drafters read the caption rows");
  const auto length = static_cast<std::int64_t>(prefix.attendable.size());
  std::int64_t first_valid = length;
  for (std::int64_t j = length - 1; j >= 0 && prefix.attendable[static_cast<std::size_t>(j)]; --j) first_valid = j;
  // LANTERN's port adds finfo.min for a causal and for a padding exclusion (-inf for both). Caption queries and keys
  // are zero (zero RoPE rows), so a valid row sees the valid rows up to itself, and a padding row i sees rows j <= i
  // and every valid row, uniformly.
  std::vector<float> bias(static_cast<std::size_t>(length * length), kMaskedOut);
  for (std::int64_t i = 0; i < length; ++i)
    for (std::int64_t j = 0; j < length; ++j) {
      const bool valid_key = j >= first_valid;
      const bool visible = i >= first_valid ? (valid_key && j <= i) : (j <= i || valid_key);
      if (visible) bias[static_cast<std::size_t>(i * length + j)] = 0.0f;
    }
  const at::Tensor mask = at::from_blob(bias.data(), {length, length}, at::kFloat).clone();
  const at::Tensor positions = at::arange(length, at::kLong);
  return feature(target_.hidden_uncached(prefix.embeddings, positions, mask));
}

void Drafter::read_prefix(const at::Tensor& features, KVCache& cache) const {
  const int n = prefix_rows();
  if (n == 0) return;
  std::vector<std::int64_t> positions(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) positions[static_cast<std::size_t>(i)] = i;  // zero RoPE rows, as the target's prefix
  forward(at::zeros({n}, at::kLong), features.narrow(1, 0, n), positions, {}, cache);
}

at::Tensor Drafter::fuse(const at::Tensor& tokens, const at::Tensor& features) const {
  const at::Tensor embedded = convention_ == DrafterConvention::Lantern ? at::embedding(weights_.at("embed_tokens.weight"), tokens)
                                                                       : target_.token_embeddings(tokens);  // [..., N, dim]
  const at::Tensor e = embedded.dim() < features.dim() ? embedded.unsqueeze(0).expand_as(features) : embedded;
  return linear(at::cat({e, features.to(e.scalar_type())}, -1), fc_, weights_.at("fc.bias"));
}

at::Tensor Drafter::forward(const at::Tensor& tokens, const at::Tensor& features,
                            const std::vector<std::int64_t>& positions, const at::Tensor& attend,
                            KVCache& cache) const {
  const int n = static_cast<int>(positions.size());
  if (tokens.numel() != n || features.size(1) != n || features.size(0) != cache.rows())
    throw Error("drafter: tokens, features [rows, N, dim] and positions disagree");
  const int begin = cache.append_slots(positions, {});
  try {
    const at::Tensor rope = rope_rows(positions);
    return decoder_layer(fuse(tokens.to(target_.device()), features.to(target_.device())), layer_,
                         target_.config().n_head, norm_eps_, rope,
                         visibility_bias(cache, begin, n, attend, target_.device()), &cache, 0, begin);
  } catch (...) {
    cache.truncate(begin);
    throw;
  }
}

at::Tensor Drafter::forward_teacher(const at::Tensor& tokens, const at::Tensor& features) const {
  if (convention_ != DrafterConvention::Speculum) throw Error("training continues Speculum-convention drafters only, not imported LANTERN ones");
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
