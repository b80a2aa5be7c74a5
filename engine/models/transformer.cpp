#include "models/transformer.h"

#include <cmath>
#include <string>

#include "error.h"
#include "models/blocks.h"
#include "models/rope.h"
#include "models/text_encoder.h"

namespace speculum {
namespace {

const at::Tensor& weight(const TensorMap& weights, const std::string& name) { return find_tensor(weights, name, "target"); }

}  // namespace

Transformer::Transformer(GptConfig config, TensorMap weights, at::Device device, WeightFormat format)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      device_(device),
      cache_dtype_(format == WeightFormat::F32 ? at::kFloat : at::kHalf) {
  validate_config(config_);
  for (auto& [name, t] : weights_) t = t.to(device_);
  for (int i = 0; i < config_.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    layers_.push_back(decoder_layer_weights(weights_, p, "target", /*with_attention_norm=*/true, format));
    if (format != WeightFormat::F32)
      for (const auto& name : decoder_layer_matrix_names(p)) weights_.erase(name);
  }
  output_ = make_linear_weight(weight(weights_, "output.weight"), format);
  if (format != WeightFormat::F32) weights_.erase("output.weight");
  rope_table_ = rope_table_2d(config_.grid_rows, config_.grid_cols, config_.head_dim(), config_.rope_base,
                              config_.cls_token_num)
                    .to(device_);
}

KVCache Transformer::make_cache(int rows, int extra_slots) const {
  return KVCache(config_.n_layer, rows, config_.n_head, config_.head_dim(), config_.max_positions() + extra_slots,
                 at::TensorOptions().dtype(cache_dtype_).device(device_));
}

ForwardOutput Transformer::forward(const ForwardInput& in, KVCache& cache) const {
  const int n = static_cast<int>(in.positions.size());
  const int rows = cache.rows();
  const bool image_tokens = in.tokens.defined();
  for (auto p : in.positions) {
    if (p < 0 || p >= rope_table_.size(0))
      throw Error("forward: position " + std::to_string(p) + " outside the model's " +
                  std::to_string(rope_table_.size(0)) + " positions");
    if (image_tokens && config_.image_positions && p < config_.cls_token_num)
      throw Error("forward: image token at position " + std::to_string(p) + ", inside the condition prefix");
  }
  const at::Tensor positions = at::tensor(in.positions, at::kLong).to(device_);
  at::Tensor x;
  if (image_tokens) {
    if (in.tokens.numel() != n) throw Error("forward: tokens and positions differ in length");
    x = image_embeddings(in.tokens.to(device_).reshape({1, n}), positions).expand({rows, n, config_.dim});
  } else {
    if (!in.embeddings.defined() || in.embeddings.size(0) != rows || in.embeddings.size(1) != n)
      throw Error("forward: embeddings must be [rows, N, dim] matching the cache rows and positions");
    x = in.embeddings.to(device_);
  }

  const int begin = cache.append_slots(in.positions, in.attendable);
  try {
    x = run_blocks(x, rope_table_.index_select(0, positions), visibility_bias(cache, begin, n, in.attend, device_), &cache, begin);
    ForwardOutput out;
    const int m = in.logits_last < 0 ? n : std::min(in.logits_last, n);
    if (m > 0) out.logits = head(x.narrow(1, n - m, m));
    if (in.want_hidden) out.hidden = x;
    return out;
  } catch (...) {
    cache.truncate(begin);
    throw;
  }
}

at::Tensor Transformer::run_blocks(at::Tensor x, const at::Tensor& rope, const at::Tensor& bias, KVCache* cache,
                                   int begin) const {
  for (int l = 0; l < config_.n_layer; ++l)
    x = decoder_layer(x, layers_[l], config_.n_head, config_.norm_eps, rope, bias, cache, l, begin);
  return x;
}

at::Tensor Transformer::hidden_uncached(const at::Tensor& x, const at::Tensor& positions, const at::Tensor& bias) const {
  return run_blocks(x.to(device_), rope_table_.index_select(0, positions.to(device_)), bias.to(device_), nullptr, 0);
}

at::Tensor Transformer::final_norm(const at::Tensor& hidden) const {
  return rms_norm(hidden, weight(weights_, "norm.weight"), config_.norm_eps).to(hidden.scalar_type());
}

at::Tensor Transformer::head(const at::Tensor& hidden) const {
  return linear(rms_norm(hidden, weight(weights_, "norm.weight"), config_.norm_eps), output_).to(at::kFloat);
}

std::int64_t Transformer::decode_step_weight_bytes() const {
  std::int64_t bytes = output_.bytes();
  for (const DecoderLayer& l : layers_)
    for (const LinearWeight* w : {&l.wqkv, &l.wo, &l.w1, &l.w2, &l.w3}) bytes += w->bytes();
  return bytes;
}

at::Tensor Transformer::forward_teacher(const at::Tensor& prefix_embeddings, const at::Tensor& prefix_attendable,
                                        const at::Tensor& tokens) const {
  return head(forward_teacher_hidden(prefix_embeddings, prefix_attendable, tokens));
}

at::Tensor Transformer::forward_teacher_hidden(const at::Tensor& prefix_embeddings, const at::Tensor& prefix_attendable,
                                               const at::Tensor& tokens) const {
  const auto b = tokens.size(0), n = tokens.size(1), l = prefix_embeddings.size(1);
  if (l != config_.cls_token_num || prefix_embeddings.size(0) != b)
    throw Error("forward_teacher: prefix must be [B, cls_token_num, dim] with the tokens' batch size");
  const auto t = l + n - 1;
  // Prefix rows of the RoPE table are zero; image i sits at cls + i.
  const at::Tensor positions = at::arange(t, at::TensorOptions().dtype(at::kLong).device(device_));
  const at::Tensor images = image_embeddings(tokens.narrow(1, 0, n - 1).to(device_), positions.narrow(0, l, n - 1));
  const at::Tensor x = at::cat({prefix_embeddings.to(device_), images}, 1);
  const at::Tensor rope = rope_table_.index_select(0, positions);
  // Row b's query i may see key j <= i if j is an image slot or an attendable prefix slot (or j == i).
  const auto bool_opts = at::TensorOptions().dtype(at::kBool).device(device_);
  const at::Tensor keys = at::cat({prefix_attendable.to(device_, at::kBool), at::ones({b, n - 1}, bool_opts)}, 1);
  const at::Tensor visible = (at::ones({t, t}, bool_opts).tril().unsqueeze(0) & keys.unsqueeze(1)) | at::eye(t, bool_opts).unsqueeze(0);
  const at::Tensor bias = at::zeros({b, 1, t, t}, at::TensorOptions().device(device_)).masked_fill(visible.logical_not().unsqueeze(1), kMaskedOut);
  return run_blocks(x, rope, bias, nullptr, 0).narrow(1, l - 1, n);
}

at::Tensor Transformer::rope_rows(const at::Tensor& positions) const {
  return rope_table_.index_select(0, positions.to(device_));
}

at::Tensor Transformer::token_embeddings(const at::Tensor& tokens) const {
  return weight(weights_, "tok_embeddings.weight").index_select(0, tokens.reshape({-1}).to(device_)).reshape(
      [&] { auto shape = tokens.sizes().vec(); shape.push_back(config_.dim); return shape; }());
}

at::Tensor Transformer::image_embeddings(const at::Tensor& tokens, const at::Tensor& positions) const {
  const at::Tensor x = token_embeddings(tokens);
  if (!config_.image_positions) return x;
  return x + weight(weights_, "pos_embeddings.weight").index_select(0, positions - config_.cls_token_num).unsqueeze(0);
}

at::Tensor Transformer::caption_features(const std::vector<int>& word_ids) const {
  const int length = config_.cls_token_num, words = static_cast<int>(word_ids.size());
  if (words > length)
    throw Error("the prompt has " + std::to_string(words) + " words; this model reads at most " + std::to_string(length));
  for (int id : word_ids)
    if (id < 0 || id >= config_.text_vocab_size) throw Error("text token id " + std::to_string(id) + " out of range");
  const at::Tensor table = weight(weights_, "text_encoder.word_embeddings.weight");
  if (words == 0) return at::zeros({length, config_.caption_dim}, table.options());
  const at::Tensor ids = at::tensor(std::vector<std::int64_t>(word_ids.begin(), word_ids.end()), at::kLong);
  const at::Tensor picked = table.index_select(0, ids.to(device_));
  return at::cat({at::zeros({length - words, config_.caption_dim}, table.options()), picked});
}

at::Tensor Transformer::project_caption(const at::Tensor& features) const {
  const at::Tensor hidden = at::gelu(at::linear(features, weight(weights_, "cls_embedding.cap_proj.fc1.weight")), "tanh");
  return at::linear(hidden, weight(weights_, "cls_embedding.cap_proj.fc2.weight"));
}

namespace {

// Flags [B * L] as a bool tensor of `shape` on `device`.
at::Tensor flags_tensor(const std::vector<char>& flags, std::vector<std::int64_t> shape, at::Device device) {
  return at::tensor(std::vector<std::int64_t>(flags.begin(), flags.end()), at::kLong).reshape(shape).to(device, at::kBool);
}

std::vector<char> dropped_rows(std::size_t batch, const std::vector<bool>& null_caption) {
  std::vector<char> dropped;
  for (std::size_t b = 0; b < batch; ++b) dropped.push_back(b < null_caption.size() && null_caption[b]);
  return dropped;
}

}  // namespace

std::pair<at::Tensor, at::Tensor> Transformer::caption_batch(const std::vector<std::vector<int>>& word_ids,
                                                             const std::vector<bool>& null_caption) const {
  if (config_.condition != ConditionKind::Text) throw Error("this model is class-conditioned, not text-conditioned");
  if (config_.caption_source != CaptionSource::Words)
    throw Error("this model reads T5 features, not vocabulary words: train it on encoded captions (encoded_caption_batch)");
  const int length = config_.cls_token_num;
  const auto batch = static_cast<std::int64_t>(word_ids.size());
  std::vector<at::Tensor> features;
  std::vector<char> attendable;
  for (std::int64_t b = 0; b < batch; ++b) {
    features.push_back(caption_features(word_ids[b]));
    const std::vector<char> slots = caption_slots(static_cast<int>(word_ids[b].size()));
    attendable.insert(attendable.end(), slots.begin(), slots.end());
  }
  const at::Tensor mask = flags_tensor(attendable, {batch, length}, device_);
  // The null caption replaces the encoded words of a dropped row (it is already a feature sequence).
  const at::Tensor encoded = encode_caption(config_, weights_, at::stack(features), mask);
  const at::Tensor null = weight(weights_, "cls_embedding.uncond_embedding").unsqueeze(0).to(encoded.scalar_type());
  const at::Tensor dropped = flags_tensor(dropped_rows(word_ids.size(), null_caption), {batch, 1, 1}, device_);
  return {project_caption(at::where(dropped, null, encoded)), mask};
}

std::pair<at::Tensor, at::Tensor> Transformer::encoded_caption_batch(const std::vector<at::Tensor>& features,
                                                                     const std::vector<std::vector<char>>& slots,
                                                                     const std::vector<bool>& null_caption) const {
  if (config_.condition != ConditionKind::Text || config_.caption_source != CaptionSource::T5)
    throw Error("encoded caption batches are for models that read T5 features");
  const auto batch = static_cast<std::int64_t>(features.size());
  std::vector<char> attendable;
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::vector<char>& row = slots.at(static_cast<std::size_t>(b));
    if (features[b].sizes() != at::IntArrayRef{config_.cls_token_num, config_.caption_dim} ||
        static_cast<int>(row.size()) != config_.cls_token_num)
      throw Error("caption features must be [" + std::to_string(config_.cls_token_num) + ", " + std::to_string(config_.caption_dim) +
                  "] with a slot flag per row");
    attendable.insert(attendable.end(), row.begin(), row.end());
  }
  const at::Tensor null = weight(weights_, "cls_embedding.uncond_embedding");
  const at::Tensor encoded = at::stack(features).to(device_, null.scalar_type());
  const at::Tensor dropped = flags_tensor(dropped_rows(features.size(), null_caption), {batch, 1, 1}, device_);
  return {project_caption(at::where(dropped, null.unsqueeze(0), encoded)), flags_tensor(attendable, {batch, config_.cls_token_num}, device_)};
}

std::pair<at::Tensor, at::Tensor> Transformer::class_batch(const std::vector<int>& class_ids,
                                                           const std::vector<bool>& null_class) const {
  if (config_.condition != ConditionKind::Class) throw Error("this model is text-conditioned, not class-conditioned");
  std::vector<std::int64_t> ids;
  for (std::size_t b = 0; b < class_ids.size(); ++b) {
    const bool null = b < null_class.size() && null_class[b];
    if (null && !config_.class_null_row) throw Error("this model's class table has no null row: train it with class dropout 0");
    if (!null && (class_ids[b] < 0 || class_ids[b] >= config_.num_classes))
      throw Error("class " + std::to_string(class_ids[b]) + " is outside [0, " + std::to_string(config_.num_classes) + ")");
    ids.push_back(null ? config_.num_classes : class_ids[b]);
  }
  const at::Tensor table = weight(weights_, "cls_embedding.embedding_table.weight");
  const auto batch = static_cast<std::int64_t>(ids.size());
  return {table.index_select(0, at::tensor(ids, at::kLong).to(device_)).unsqueeze(1),
          at::ones({batch, config_.cls_token_num}, at::TensorOptions().dtype(at::kBool).device(device_))};
}

ConditionPrefix Transformer::class_prefix(int class_id, int rows) const {
  if (rows > 1 && config_.condition == ConditionKind::Class && !config_.class_null_row)
    throw Error("CFG is unavailable: this model's class table has no null row (it was trained without class dropout); use cfg 1");
  // Row 1 (with CFG) is the null class.
  return {class_batch(std::vector<int>(static_cast<std::size_t>(rows), class_id), {false, true}).first, {1}};
}

ConditionPrefix Transformer::text_prefix(const std::vector<int>& word_ids, int rows) const {
  if (config_.condition != ConditionKind::Text) throw Error("this model is class-conditioned, not text-conditioned");
  if (config_.caption_source != CaptionSource::Words)
    throw Error("this model reads T5 caption features, not words of a vocabulary");
  std::vector<char> slots = caption_slots(static_cast<int>(word_ids.size()));
  const at::Tensor words = at::tensor(std::vector<std::int64_t>(slots.begin(), slots.end()), at::kLong).to(device_, at::kBool);
  const at::Tensor encoded = encode_caption(config_, weights_, caption_features(word_ids).unsqueeze(0), words.unsqueeze(0))[0];
  return caption_prefix(encoded, std::move(slots), rows);
}

ConditionPrefix Transformer::caption_prefix(const at::Tensor& features, std::vector<char> slots, int rows) const {
  if (config_.condition != ConditionKind::Text) throw Error("this model is class-conditioned, not text-conditioned");
  if (features.dim() != 2 || features.size(0) != config_.cls_token_num || features.size(1) != config_.caption_dim ||
      static_cast<int>(slots.size()) != config_.cls_token_num)
    throw Error("caption features must be [" + std::to_string(config_.cls_token_num) + ", " + std::to_string(config_.caption_dim) +
                "] with a slot flag per row");
  const at::Tensor null = weight(weights_, "cls_embedding.uncond_embedding");
  at::Tensor batch = features.to(device_, null.scalar_type()).unsqueeze(0);
  if (rows > 1) batch = at::cat({batch, null.unsqueeze(0)});
  return {project_caption(batch), std::move(slots)};
}

std::vector<char> Transformer::caption_slots(int words) const {
  std::vector<char> attendable(config_.cls_token_num, 0);
  std::fill(attendable.end() - std::min(words, config_.cls_token_num), attendable.end(), 1);
  return attendable;
}

std::vector<std::int64_t> Transformer::prefix_positions() const {
  std::vector<std::int64_t> positions(config_.cls_token_num);
  for (int i = 0; i < config_.cls_token_num; ++i) positions[i] = i;
  return positions;
}

}  // namespace speculum
