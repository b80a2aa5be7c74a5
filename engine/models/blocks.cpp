#include "models/blocks.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <string>

#include "error.h"
#include "models/rope.h"

namespace speculum {

namespace {

at::Tensor rms_norm_loop(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::Tensor in = x.contiguous(), w = weight.contiguous();
  at::Tensor out = at::empty_like(in);
  const std::int64_t dim = in.size(-1), rows = in.numel() / dim;
  const float* xp = in.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  float* yp = out.data_ptr<float>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = xp + r * dim;
    float squares = 0.0f;
    for (std::int64_t i = 0; i < dim; ++i) squares += row[i] * row[i];
    const float inverse = 1.0f / std::sqrt(squares / static_cast<float>(dim) + static_cast<float>(eps));
    for (std::int64_t i = 0; i < dim; ++i) yp[r * dim + i] = row[i] * inverse * wp[i];
  }
  return out;
}

// q [rows, heads, 1, hd] over keys and values [rows, heads, L, hd] (rows of hd contiguous floats: the KV cache's
// layout) with a bias [1, L]: softmax(q kᵀ · scale + bias) v as [rows, 1, heads · hd].
at::Tensor attend_one_query(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias, double scale) {
  const std::int64_t rows = q.size(0), heads = q.size(1), hd = q.size(3), keys = k.size(2);
  const at::Tensor query = q.contiguous(), b = bias.contiguous();
  at::Tensor out = at::empty({rows, 1, heads * hd}, q.options());
  const float* qp = query.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  const float* kp = k.data_ptr<float>();
  const float* vp = v.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const auto ks = k.strides(), vs = v.strides();
  at::parallel_for(0, rows * heads, std::max<std::int64_t>(1, kMinWorkPerThread / (keys * hd)), [&](std::int64_t first, std::int64_t last) {
    std::vector<float> p(static_cast<std::size_t>(keys));
    for (std::int64_t i = first; i < last; ++i) {
      const std::int64_t r = i / heads, h = i % heads;
      const float* qi = qp + i * hd;
      const float* ki = kp + r * ks[0] + h * ks[1];
      const float* vi = vp + r * vs[0] + h * vs[1];
      // q · kᵀ is a product with the keys as a weight matrix [keys, hd]: the vectorised streaming kernel.
      stream_linear(qi, 1, WeightView{WeightFormat::F32, ki, nullptr, keys, hd}, nullptr, p.data(), 0, keys);
      float largest = -INFINITY;
      for (std::int64_t l = 0; l < keys; ++l) {
        p[l] = p[l] * static_cast<float>(scale) + bp[l];
        largest = std::max(largest, p[l]);
      }
      float total = 0.0f;
      for (std::int64_t l = 0; l < keys; ++l) total += (p[l] = std::exp(p[l] - largest));
      float* o = op + r * heads * hd + h * hd;
      std::fill(o, o + hd, 0.0f);
      for (std::int64_t l = 0; l < keys; ++l) {
        const float weight = p[l] / total;
        for (std::int64_t d = 0; d < hd; ++d) o[d] += weight * vi[l * vs[2] + d];
      }
    }
  });
  return out;
}

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (plain_cpu_floats({&x, &weight})) return rms_norm_loop(x, weight, eps);
  const at::Tensor xf = x.to(at::kFloat);
  return (xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps)).to(x.scalar_type()) * weight;
}

at::Tensor swiglu(const at::Tensor& h, const LinearWeight& w1, const LinearWeight& w3, const LinearWeight& w2) {
  const at::Tensor gate = linear(h, w1), up = linear(h, w3);
  if (!plain_cpu_floats({&gate, &up}) || !gate.is_contiguous() || !up.is_contiguous()) return linear(at::silu(gate) * up, w2);
  float* g = gate.data_ptr<float>();  // fresh contiguous outputs of linear(): overwritten in place
  const float* u = up.data_ptr<float>();
  for (std::int64_t i = 0; i < gate.numel(); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
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
  at::Tensor attn;  // [rows, N, dim]
  if (n == 1 && bias.dim() == 2 && bias.size(0) == 1 && k.stride(3) == 1 && k.stride(2) == hd && v.stride(3) == 1 &&
      plain_cpu_floats({&q, &k, &v, &bias})) {
    attn = attend_one_query(q, k, v, bias, scale);
  } else {
    const at::Tensor scores = at::matmul(q, k.transpose(2, 3)) * scale + bias;
    attn = at::matmul(at::softmax(scores, -1), v).transpose(1, 2).reshape({rows, n, dim});
  }
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
