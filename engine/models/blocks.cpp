#include "models/blocks.h"

#include <cmath>
#include <string>

#include "error.h"
#include "models/rope.h"

namespace speculum {

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::Tensor xf = x.to(at::kFloat);
  return (xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps)).to(x.scalar_type()) * weight;
}

at::Tensor swiglu(const at::Tensor& h, const at::Tensor& w1, const at::Tensor& w3, const at::Tensor& w2) {
  return at::linear(at::silu(at::linear(h, w1)) * at::linear(h, w3), w2);
}

DecoderLayer decoder_layer_weights(const TensorMap& weights, const std::string& prefix, const char* owner,
                                   bool with_attention_norm) {
  const auto w = [&](const char* name) { return find_tensor(weights, prefix + name, owner); };
  return {w("attention.wqkv.weight"),  w("attention.wo.weight"),
          w("feed_forward.w1.weight"), w("feed_forward.w2.weight"),
          w("feed_forward.w3.weight"), with_attention_norm ? w("attention_norm.weight") : at::Tensor(),
          w("ffn_norm.weight")};
}

at::Tensor decoder_layer(const at::Tensor& x, const DecoderLayer& L, int heads, double norm_eps, const at::Tensor& rope,
                         const at::Tensor& bias, KVCache* cache, int cache_layer, int begin) {
  const int rows = static_cast<int>(x.size(0)), n = static_cast<int>(x.size(1));
  const int dim = static_cast<int>(x.size(2)), hd = dim / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  const at::Tensor qkv = at::linear(L.attention_norm.defined() ? rms_norm(x, L.attention_norm, norm_eps) : x, L.wqkv);
  // q and k rotate together: [rows, N, 2 * heads, hd]
  const auto qk =
      apply_rope(qkv.narrow(-1, 0, 2 * dim).reshape({rows, n, 2 * heads, hd}), rope).transpose(1, 2).split(heads, 1);
  const at::Tensor& q = qk[0];
  at::Tensor k = qk[1];
  at::Tensor v = qkv.narrow(-1, 2 * dim, dim).reshape({rows, n, heads, hd}).transpose(1, 2);
  if (cache) {
    cache->write(cache_layer, begin, k, v);
    k = cache->keys(cache_layer, begin + n);
    v = cache->values(cache_layer, begin + n);
  }
  const at::Tensor scores = at::matmul(q, k.transpose(2, 3)) * scale + bias;
  const at::Tensor attn = at::matmul(at::softmax(scores, -1), v);
  const at::Tensor h = x + at::linear(attn.transpose(1, 2).reshape({rows, n, dim}), L.wo);
  return h + swiglu(rms_norm(h, L.ffn_norm, norm_eps), L.w1, L.w3, L.w2);
}

at::Tensor visibility_bias(const KVCache& cache, int begin, int n, const at::Tensor& attend, at::Device device) {
  const int end = begin + n;
  const auto& attendable = cache.attendable();
  if (n == 1 && !attend.defined()) {  // the common single-token step: one row of key visibility
    std::vector<float> row(end);
    for (int j = 0; j < end; ++j) row[j] = attendable[j] || j == begin ? 0.0f : kMaskedOut;
    return at::from_blob(row.data(), {1, end}, at::kFloat).to(device, /*non_blocking=*/false, /*copy=*/true);
  }
  std::vector<char> key_ok(attendable.begin(), attendable.begin() + end);
  const auto cpu_bool = at::TensorOptions().dtype(at::kBool);
  at::Tensor visible = at::from_blob(key_ok.data(), {end}, at::TensorOptions().dtype(at::kChar))
                           .to(at::kBool)
                           .unsqueeze(0)
                           .expand({n, end})
                           .clone();
  const at::Tensor intra = attend.defined() ? attend.to(at::kCPU, at::kBool) : at::ones({n, n}, cpu_bool).tril();
  const auto m = intra.size(1);
  if (intra.dim() != 2 || intra.size(0) != n || m < n || m > end)
    throw Error("forward: attend mask must be [" + std::to_string(n) + ", M] with " + std::to_string(n) +
                " <= M <= " + std::to_string(end));
  visible.narrow(1, end - m, m).logical_and_(intra);
  visible.narrow(1, begin, n).logical_or_(at::eye(n, cpu_bool));  // a padded slot still sees itself
  return at::zeros({n, end}, at::kFloat).masked_fill_(visible.logical_not(), kMaskedOut).to(device);
}

}  // namespace speculum
