#include "models/blocks.h"

#include <cmath>
#include <string>

#include "error.h"
#include "models/decode_loops.h"
#include "models/decoder_layer_step.h"
#include "models/rope.h"

namespace speculum {

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (plain_cpu_floats({&x, &weight})) return rms_norm_rows(x, weight, eps);
  const at::Tensor xf = x.to(at::kFloat);
  return (xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps)).to(x.scalar_type()) * weight;
}

at::Tensor swiglu(const at::Tensor& h, const LinearWeight& w1, const LinearWeight& w3, const LinearWeight& w2) {
  at::Tensor gate = linear(h, w1);
  const at::Tensor up = linear(h, w3);
  if (!plain_cpu_floats({&gate, &up}) || !gate.is_contiguous() || !up.is_contiguous()) return linear(at::silu(gate) * up, w2);
  silu_gate_in_place(gate, up);  // a fresh contiguous output of linear(): overwritten
  return linear(gate, w2);
}

namespace {

// A decoder layer's matrices, in DecoderLayer's order.
constexpr const char* kLayerMatrices[] = {"attention.wqkv.weight", "attention.wo.weight", "feed_forward.w1.weight",
                                          "feed_forward.w2.weight", "feed_forward.w3.weight"};

}  // namespace

std::vector<std::string> decoder_layer_matrix_names(const std::string& prefix) {
  std::vector<std::string> names;
  for (const char* name : kLayerMatrices) names.push_back(prefix + name);
  return names;
}

DecoderLayer decoder_layer_weights(const TensorMap& weights, const std::string& prefix, const char* owner,
                                   bool with_attention_norm, WeightFormat format) {
  const auto w = [&](const char* name) { return find_tensor(weights, prefix + name, owner); };
  LinearWeight matrices[std::size(kLayerMatrices)];
  for (std::size_t i = 0; i < std::size(kLayerMatrices); ++i) matrices[i] = make_linear_weight(w(kLayerMatrices[i]), format);
  return {matrices[0], matrices[1], matrices[2], matrices[3], matrices[4],
          with_attention_norm ? w("attention_norm.weight") : at::Tensor(), w("ffn_norm.weight")};
}

at::Tensor decoder_layer(const at::Tensor& x, const DecoderLayer& L, int heads, double norm_eps, const at::Tensor& rope,
                         const at::Tensor& bias, KVCache* cache, int cache_layer, int begin) {
  if (decoder_layer_step_applies(x, L, rope, bias, cache, begin))
    return decoder_layer_step(x, L, heads, norm_eps, rope, bias, cache, cache_layer, begin);
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
  const at::Tensor attn = at::matmul(at::softmax(scores, -1), v).transpose(1, 2).reshape({rows, n, dim});
  const at::Tensor h = x + linear(attn, L.wo);
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
