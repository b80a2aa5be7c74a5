#include "models/decoder_layer_step.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/decode_loops.h"
#include "models/linear.h"

namespace speculum {

bool decoder_layer_step_applies(const at::Tensor& x, const DecoderLayer& layer, const at::Tensor& rope,
                                const at::Tensor& bias, const KVCache* cache, int begin) {
  if (x.dim() != 3 || x.size(1) != 1 || x.size(0) > kStreamRowsMax) return false;
  if (bias.dim() != 2 || bias.size(0) != 1 || bias.size(1) != (cache ? begin + 1 : 1)) return false;
  if (!plain_cpu_floats({&x, &rope, &bias, &layer.ffn_norm})) return false;
  if (layer.attention_norm.defined() && !plain_cpu_floats({&layer.attention_norm})) return false;
  for (const LinearWeight* w : {&layer.wqkv, &layer.wo, &layer.w1, &layer.w2, &layer.w3})
    if (w->values.is_cuda() || (at::GradMode::is_enabled() && w->values.requires_grad())) return false;
  return true;
}

at::Tensor decoder_layer_step(const at::Tensor& x, const DecoderLayer& L, int heads, double norm_eps,
                              const at::Tensor& rope, const at::Tensor& bias, KVCache* cache, int cache_layer, int begin) {
  const int rows = static_cast<int>(x.size(0));
  const std::int64_t dim = x.size(2), hd = dim / heads, ffn = L.w1.out_features();
  const float eps = static_cast<float>(norm_eps);
  const at::Tensor in = x.contiguous(), table = rope.contiguous(), visible = bias.contiguous();
  const float* xp = in.data_ptr<float>();

  std::vector<float> normed(rows * dim), qkv(rows * 3 * dim), attended(rows * dim), gate(rows * ffn), up(rows * ffn);
  const float* layer_input = xp;
  if (L.attention_norm.defined()) {
    rms_norm_raw(xp, L.attention_norm.contiguous().data_ptr<float>(), rows, dim, eps, normed.data());
    layer_input = normed.data();
  }
  stream_product(layer_input, rows, L.wqkv, nullptr, qkv.data());
  rope_raw(qkv.data(), rows, 1, 3 * dim, 2 * heads, hd, table.data_ptr<float>());  // q and k turn together

  // The new keys and values go to their slot: the cache's, or a buffer holding only this token. A cache that keeps
  // float16 copies gets the values rounded to float16 in both (attention reads the copies: half the bytes).
  const bool half = cache && cache->half_precision();
  std::uint16_t* half_keys = half ? cache->half_key_data(cache_layer) : nullptr;
  std::uint16_t* half_values = half ? cache->half_value_data(cache_layer) : nullptr;
  std::vector<std::uint16_t> half_bits;
  if (half) {
    half_bits.resize(rows * 2 * dim);
    for (std::int64_t r = 0; r < rows; ++r) round_to_f16(qkv.data() + r * 3 * dim + dim, 2 * dim, half_bits.data() + r * 2 * dim);
  }
  std::vector<float> own_keys, own_values;
  float* key_store;
  float* value_store;
  std::int64_t slots;
  if (cache) {
    key_store = cache->key_data(cache_layer);
    value_store = cache->value_data(cache_layer);
    slots = cache->capacity();
  } else {
    own_keys.resize(rows * dim);
    own_values.resize(rows * dim);
    key_store = own_keys.data();
    value_store = own_values.data();
    slots = 1;
    begin = 0;
  }
  const std::int64_t head_stride = slots * hd, row_stride = heads * head_stride;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t h = 0; h < heads; ++h) {
      const float* token = qkv.data() + r * 3 * dim + h * hd;
      const std::int64_t slot = r * row_stride + h * head_stride + begin * hd;
      std::copy_n(token + dim, hd, key_store + slot);
      std::copy_n(token + 2 * dim, hd, value_store + slot);
      if (half) {
        const std::uint16_t* bits = half_bits.data() + r * 2 * dim + h * hd;
        std::copy_n(bits, hd, half_keys + slot);
        std::copy_n(bits + dim, hd, half_values + slot);
      }
    }

  OneQueryAttention a;
  a.rows = rows;
  a.heads = heads;
  a.hd = static_cast<int>(hd);
  a.keys = begin + 1;
  a.queries = qkv.data();
  a.query_stride = 3 * dim;
  a.cached_keys = half ? static_cast<const void*>(half_keys) : key_store;
  a.cached_values = half ? static_cast<const void*>(half_values) : value_store;
  a.cache_format = half ? WeightFormat::F16 : WeightFormat::F32;
  a.row_stride = row_stride;
  a.head_stride = head_stride;
  a.bias = visible.data_ptr<float>();
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  attend_one_query_raw(a, attended.data());

  // h = x + wo · attention; out = h + w2 · (silu(w1 · norm(h)) ⊙ w3 · norm(h))
  at::Tensor out = at::empty({rows, 1, dim}, in.options());
  float* h = out.data_ptr<float>();
  stream_product(attended.data(), rows, L.wo, nullptr, h);
  for (std::int64_t i = 0; i < rows * dim; ++i) h[i] += xp[i];
  rms_norm_raw(h, L.ffn_norm.contiguous().data_ptr<float>(), rows, dim, eps, normed.data());
  stream_product(normed.data(), rows, L.w1, nullptr, gate.data());
  stream_product(normed.data(), rows, L.w3, nullptr, up.data());
  silu_gate_raw(gate.data(), up.data(), rows * ffn);
  stream_product(gate.data(), rows, L.w2, nullptr, attended.data());
  for (std::int64_t i = 0; i < rows * dim; ++i) h[i] += attended[i];
  return out;
}

}  // namespace speculum
