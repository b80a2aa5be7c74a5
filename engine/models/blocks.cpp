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

at::Tensor swiglu(const at::Tensor& h, const LinearWeight& w1, const LinearWeight& w3, const LinearWeight& w2) {
  return linear(at::silu(linear(h, w1)) * linear(h, w3), w2);
}

std::vector<std::string> decoder_layer_matrix_names(const std::string& prefix) {
  return {prefix + "attention.wqkv.weight", prefix + "attention.wo.weight", prefix + "feed_forward.w1.weight",
          prefix + "feed_forward.w2.weight", prefix + "feed_forward.w3.weight"};
}

DecoderLayer decoder_layer_weights(const TensorMap& weights, const std::string& prefix, const char* owner,
                                   bool with_attention_norm, WeightFormat format) {
  const auto w = [&](const char* name) { return find_tensor(weights, prefix + name, owner); };
  const auto m = [&](const char* name) { return make_linear_weight(w(name), format); };
  return {m("attention.wqkv.weight"),
          m("attention.wo.weight"),
          m("feed_forward.w1.weight"),
          m("feed_forward.w2.weight"),
          m("feed_forward.w3.weight"),
          with_attention_norm ? w("attention_norm.weight") : at::Tensor(),
          w("ffn_norm.weight")};
}

at::Tensor decoder_layer(const at::Tensor& x, const DecoderLayer& L, int heads, double norm_eps, const at::Tensor& rope,
                         const at::Tensor& bias, KVCache* cache, int cache_layer, int begin) {
  const int rows = static_cast<int>(x.size(0)), n = static_cast<int>(x.size(1));
  const int dim = static_cast<int>(x.size(2)), hd = dim / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  const at::Tensor qkv = linear(L.attention_norm.defined() ? rms_norm(x, L.attention_norm, norm_eps) : x, L.wqkv);
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
  const at::Tensor h = x + linear(attn.transpose(1, 2).reshape({rows, n, dim}), L.wo);
  return h + swiglu(rms_norm(h, L.ffn_norm, norm_eps), L.w1, L.w3, L.w2);
}

at::Tensor visibility_bias(const KVCache& cache, int begin, int n, const at::Tensor& attend, at::Device device) {
  const int end = begin + n;
  const auto& attendable = cache.attendable();
  at::Tensor intra;
  int m = n;  // the last m slots are restricted by `attend`
  if (attend.defined()) {
    intra = attend.to(at::kCPU, at::kBool).contiguous();
    m = intra.dim() == 2 ? static_cast<int>(intra.size(1)) : -1;
    if (intra.dim() != 2 || intra.size(0) != n || m < n || m > end)
      throw Error("forward: attend mask must be [" + std::to_string(n) + ", M] with " + std::to_string(n) +
                  " <= M <= " + std::to_string(end));
  }
  // Built on the host in one pass: a handful of tensor ops per call would cost more than the attention
  // itself at these sizes (every speculative step pays it).
  const int rows = n == 1 && !attend.defined() ? 1 : n;
  std::vector<float> bias(static_cast<std::size_t>(rows) * end, kMaskedOut);
  const bool* allowed = intra.defined() ? intra.data_ptr<bool>() : nullptr;
  for (int i = 0; i < rows; ++i) {
    float* row = bias.data() + static_cast<std::size_t>(i) * end;
    for (int j = 0; j < end - m; ++j) row[j] = attendable[j] ? 0.0f : kMaskedOut;
    for (int j = end - m; j < end; ++j) {
      const int k = j - (end - m);  // index among the restricted slots; new token i sits at m - n + i
      const bool visible = allowed ? allowed[static_cast<std::size_t>(i) * m + k] : k <= m - n + i;
      row[j] = (visible && attendable[j]) || j == begin + i ? 0.0f : kMaskedOut;  // a padded slot still sees itself
    }
  }
  return at::from_blob(bias.data(), {rows, end}, at::kFloat).to(device, /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace speculum
