#include "models/decode_loops.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/linear.h"

namespace speculum {

bool plain_cpu_floats(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors)
    if (t->is_cuda() || t->scalar_type() != at::kFloat || (at::GradMode::is_enabled() && t->requires_grad())) return false;
  return true;
}

at::Tensor rms_norm_rows(const at::Tensor& x, const at::Tensor& weight, double eps) {
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

at::Tensor rope_rows(const at::Tensor& x, const at::Tensor& table_rows) {
  const auto sizes = x.sizes();
  const at::Tensor in = x.contiguous(), table = table_rows.contiguous();
  at::Tensor out = at::empty_like(in);
  const std::int64_t rows = sizes[0], n = sizes[1], heads = sizes[2], half = sizes[3] / 2;
  const float* xp = in.data_ptr<float>();
  const float* tp = table.data_ptr<float>();
  float* yp = out.data_ptr<float>();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t t = 0; t < n; ++t)
      for (std::int64_t h = 0; h < heads; ++h) {
        const std::int64_t base = ((r * n + t) * heads + h) * half * 2;
        for (std::int64_t i = 0; i < half; ++i) {
          const float c = tp[(t * half + i) * 2], s = tp[(t * half + i) * 2 + 1];
          const float x0 = xp[base + 2 * i], x1 = xp[base + 2 * i + 1];
          yp[base + 2 * i] = x0 * c - x1 * s;
          yp[base + 2 * i + 1] = x1 * c + x0 * s;
        }
      }
  return out;
}

at::Tensor attend_one_query_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias,
                                 double scale) {
  const std::int64_t rows = q.size(0), heads = q.size(1), hd = q.size(3), keys = k.size(2);
  const at::Tensor query = q.contiguous(), b = bias.contiguous();
  at::Tensor out = at::empty({rows, 1, heads * hd}, q.options());
  const float* qp = query.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  const float* kp = k.data_ptr<float>();
  const float* vp = v.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const auto ks = k.strides(), vs = v.strides();
  const std::int64_t grain = std::max<std::int64_t>(1, kMinWorkPerThread / (keys * hd));
  at::parallel_for(0, rows * heads, grain, [&](std::int64_t first, std::int64_t last) {
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

void silu_gate_in_place(at::Tensor& gate, const at::Tensor& up) {
  float* g = gate.data_ptr<float>();
  const float* u = up.data_ptr<float>();
  for (std::int64_t i = 0; i < gate.numel(); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

}  // namespace speculum
