#include "models/decode_loops.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/linear.h"
#include "models/step_team.h"

namespace speculum {

bool plain_cpu_floats(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors)
    if (t->is_cuda() || t->scalar_type() != at::kFloat || (at::GradMode::is_enabled() && t->requires_grad())) return false;
  return true;
}

void rms_norm_raw(const float* x, const float* weight, std::int64_t rows, std::int64_t dim, float eps, float* y) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * dim;
    float squares = 0.0f;
    for (std::int64_t i = 0; i < dim; ++i) squares += row[i] * row[i];
    const float inverse = 1.0f / std::sqrt(squares / static_cast<float>(dim) + eps);
    for (std::int64_t i = 0; i < dim; ++i) y[r * dim + i] = row[i] * inverse * weight[i];
  }
}

void rope_raw(float* x, std::int64_t rows, std::int64_t n, std::int64_t token_stride, std::int64_t heads,
              std::int64_t hd, const float* table) {
  const std::int64_t half = hd / 2;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t t = 0; t < n; ++t) {
      const float* turn = table + t * half * 2;
      for (std::int64_t h = 0; h < heads; ++h) {
        float* v = x + (r * n + t) * token_stride + h * hd;
        for (std::int64_t i = 0; i < half; ++i) {
          const float c = turn[2 * i], s = turn[2 * i + 1];
          const float x0 = v[2 * i], x1 = v[2 * i + 1];
          v[2 * i] = x0 * c - x1 * s;
          v[2 * i + 1] = x1 * c + x0 * s;
        }
      }
    }
}

void attend_one_query_raw(const OneQueryAttention& a, float* out) {
  const std::int64_t keys = a.keys, hd = a.hd;
  const std::int64_t pairs = static_cast<std::int64_t>(a.rows) * a.heads;  // (row, head) pairs, split across the team
  const int parts = static_cast<int>(std::min<std::int64_t>(pairs, team_parts(pairs * keys * hd, at::get_num_threads())));
  run_on_team(parts, [&](int part) {
    const std::int64_t first = pairs * part / parts, last = pairs * (part + 1) / parts;
    thread_local std::vector<float> p;
    p.resize(static_cast<std::size_t>(keys));
    const std::int64_t element_bytes = a.cache_format == WeightFormat::F16 ? 2 : 4;
    for (std::int64_t pair = first; pair < last; ++pair) {
      const std::int64_t r = pair / a.heads, h = pair % a.heads, offset = (r * a.row_stride + h * a.head_stride) * element_bytes;
      // The keys [keys, hd] are a weight matrix to q (the streaming kernel's product), the values the rows p weighs.
      const WeightView k{a.cache_format, static_cast<const char*>(a.cached_keys) + offset, nullptr, keys, hd};
      const WeightView v{a.cache_format, static_cast<const char*>(a.cached_values) + offset, nullptr, keys, hd};
      stream_linear(a.queries + r * a.query_stride + h * hd, 1, k, nullptr, p.data(), 0, keys);
      softmax_scores(p.data(), a.bias, a.scale, keys);
      weighted_row_sum(p.data(), v, out + pair * hd);  // out [rows, heads, hd]
    }
  });
}

void silu_gate_raw(float* gate, const float* up, std::int64_t count) { silu_gate_at(kernel_level(), gate, up, count); }

at::Tensor rms_norm_rows(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::Tensor in = x.contiguous(), w = weight.contiguous();
  at::Tensor out = at::empty_like(in);
  const std::int64_t dim = in.size(-1);
  rms_norm_raw(in.data_ptr<float>(), w.data_ptr<float>(), in.numel() / dim, dim, static_cast<float>(eps), out.data_ptr<float>());
  return out;
}

at::Tensor rope_rows(const at::Tensor& x, const at::Tensor& table_rows) {
  at::Tensor out = x.clone(at::MemoryFormat::Contiguous);
  const at::Tensor table = table_rows.contiguous();
  const auto sizes = x.sizes();
  rope_raw(out.data_ptr<float>(), sizes[0], sizes[1], sizes[2] * sizes[3], sizes[2], sizes[3], table.data_ptr<float>());
  return out;
}

void silu_gate_in_place(at::Tensor& gate, const at::Tensor& up) {
  silu_gate_raw(gate.data_ptr<float>(), up.data_ptr<float>(), gate.numel());
}

}  // namespace speculum
