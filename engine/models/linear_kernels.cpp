#include "models/linear_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <c10/util/Half.h>

#include "error.h"

namespace speculum {

// The vector kernels live in linear_kernels_avx2.cpp and linear_kernels_avx512.cpp, the only files built with those
// instruction sets.
void stream_linear_avx2(const float* x, const QuantizedRows& xq, int rows, const WeightView& w, const float* bias, float* y,
                        std::int64_t first, std::int64_t last);
void convert_weight_rows_avx2(const WeightView& w, std::int64_t first, std::int64_t last, float* out);
void stream_linear_avx512(const float* x, const QuantizedRows& xq, int rows, const WeightView& w, const float* bias,
                          float* y, std::int64_t first, std::int64_t last);
void convert_weight_rows_avx512(const WeightView& w, std::int64_t first, std::int64_t last, float* out);
void weighted_rows_avx2(const float* weights, const WeightView& rows, float* out);
void weighted_rows_avx512(const float* weights, const WeightView& rows, float* out);
void softmax_scores_avx2(float* scores, const float* bias, float scale, std::int64_t count);
void softmax_scores_avx512(float* scores, const float* bias, float scale, std::int64_t count);
void silu_gate_avx2(float* gate, const float* up, std::int64_t count);
void silu_gate_avx512(float* gate, const float* up, std::int64_t count);
void round_to_f16_f16c(float* values, std::int64_t count, std::uint16_t* bits);

namespace {

float bits_to_float(std::uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// A 16- or 32-bit weight as float32.
float weight_at(const WeightView& w, std::int64_t j, std::int64_t k) {
  const std::int64_t i = j * w.in + k;
  if (w.format == WeightFormat::F32) return static_cast<const float*>(w.values)[i];
  if (w.format == WeightFormat::F16) return from_f16_bits(static_cast<const std::uint16_t*>(w.values)[i]);
  return bits_to_float(std::uint32_t{static_cast<const std::uint16_t*>(w.values)[i]} << 16);
}

// Row r of xq times row j of 8-bit weights: block by block, an integer dot product times the two scales.
float q8_dot(const QuantizedRows& xq, int r, const WeightView& w, std::int64_t j) {
  const std::int64_t blocks = w.in / kQ8Block;
  const std::int8_t* x = xq.values + r * w.in;
  const std::int8_t* q = static_cast<const std::int8_t*>(w.values) + j * w.in;
  float sum = 0.0f;
  for (std::int64_t b = 0; b < blocks; ++b) {
    std::int32_t dot = 0;
    for (std::int64_t k = b * kQ8Block; k < (b + 1) * kQ8Block; ++k) dot += std::int32_t{x[k]} * q[k];
    sum += static_cast<float>(dot) * (xq.scales[r * blocks + b] * w.scales[j * blocks + b]);
  }
  return sum;
}

bool cpu_has(KernelLevel level) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  switch (level) {
    case KernelLevel::Portable: return true;
    case KernelLevel::Avx2: return avx2;
    case KernelLevel::Avx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

void stream_linear_plain(const float* x, const QuantizedRows& xq, int rows, const WeightView& w, const float* bias,
                         float* y, std::int64_t first, std::int64_t last) {
  for (std::int64_t j = first; j < last; ++j)
    for (int r = 0; r < rows; ++r) {
      float sum = 0.0f;
      if (w.format == WeightFormat::Q8) {
        sum = q8_dot(xq, r, w, j);
      } else {
        const float* xr = x + static_cast<std::int64_t>(r) * w.in;
        for (std::int64_t k = 0; k < w.in; ++k) sum += xr[k] * weight_at(w, j, k);
      }
      y[static_cast<std::int64_t>(r) * w.out + j] = bias ? sum + bias[j] : sum;
    }
}

void convert_weight_rows_plain(const WeightView& w, std::int64_t first, std::int64_t last, float* out) {
  for (std::int64_t j = first; j < last; ++j)
    for (std::int64_t k = 0; k < w.in; ++k)
      *out++ = w.format == WeightFormat::Q8
                   ? static_cast<const std::int8_t*>(w.values)[j * w.in + k] * w.scales[j * (w.in / kQ8Block) + k / kQ8Block]
                   : weight_at(w, j, k);
}

}  // namespace

const char* kernel_level_name(KernelLevel level) {
  switch (level) {
    case KernelLevel::Portable: return "portable";
    case KernelLevel::Avx2: return "avx2";
    case KernelLevel::Avx512: return "avx512";
  }
  return "?";
}

std::vector<KernelLevel> supported_kernel_levels() {
  std::vector<KernelLevel> levels;
  for (const KernelLevel level : {KernelLevel::Portable, KernelLevel::Avx2, KernelLevel::Avx512})
    if (cpu_has(level)) levels.push_back(level);
  return levels;
}

KernelLevel capped_kernel_level(const std::string& cap) {
  const KernelLevel best = supported_kernel_levels().back();
  if (cap.empty()) return best;
  for (const KernelLevel level : {KernelLevel::Portable, KernelLevel::Avx2, KernelLevel::Avx512})
    if (cap == kernel_level_name(level)) return std::min(level, best);
  throw Error("SPECULUM_KERNELS=" + cap + ": allowed values are portable, avx2, avx512");
}

KernelLevel kernel_level() {
  static const KernelLevel level = [] {
    const char* cap = std::getenv("SPECULUM_KERNELS");
    return capped_kernel_level(cap ? cap : "");
  }();
  return level;
}

void stream_linear_at(KernelLevel level, const float* x, const QuantizedRows& xq, int rows, const WeightView& w,
                      const float* bias, float* y, std::int64_t first, std::int64_t last) {
  switch (level) {
    case KernelLevel::Avx512: return stream_linear_avx512(x, xq, rows, w, bias, y, first, last);
    case KernelLevel::Avx2: return stream_linear_avx2(x, xq, rows, w, bias, y, first, last);
    case KernelLevel::Portable: return stream_linear_plain(x, xq, rows, w, bias, y, first, last);
  }
}

void stream_linear(const float* x, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first,
                   std::int64_t last) {
  // Each thread quantises the rows it multiplies: a few hundred activations against a whole matrix of weights.
  const QuantizedRows xq = w.format == WeightFormat::Q8 ? quantize_rows_q8(x, rows, w.in) : QuantizedRows{};
  stream_linear_at(kernel_level(), x, xq, rows, w, bias, y, first, last);
}

void convert_weight_rows_at(KernelLevel level, const WeightView& w, std::int64_t first, std::int64_t last, float* out) {
  if (w.format == WeightFormat::F32)
    return (void)std::memcpy(out, static_cast<const float*>(w.values) + first * w.in,
                             static_cast<std::size_t>((last - first) * w.in) * sizeof(float));
  switch (level) {
    case KernelLevel::Avx512: return convert_weight_rows_avx512(w, first, last, out);
    case KernelLevel::Avx2: return convert_weight_rows_avx2(w, first, last, out);
    case KernelLevel::Portable: return convert_weight_rows_plain(w, first, last, out);
  }
}

void convert_weight_rows(const WeightView& w, std::int64_t first, std::int64_t last, float* out) {
  convert_weight_rows_at(kernel_level(), w, first, last, out);
}

void weighted_row_sum_at(KernelLevel level, const float* weights, const WeightView& rows, float* out) {
  if (rows.format != WeightFormat::F32 && rows.format != WeightFormat::F16)
    throw Error("weighted_row_sum: rows in " + weight_format_name(rows.format) + "; f32 or f16 expected");
  switch (level) {
    case KernelLevel::Avx512: return weighted_rows_avx512(weights, rows, out);
    case KernelLevel::Avx2: return weighted_rows_avx2(weights, rows, out);
    case KernelLevel::Portable:
      for (std::int64_t d = 0; d < rows.in; ++d) {
        float sum = 0.0f;
        for (std::int64_t s = 0; s < rows.out; ++s) sum = std::fma(weights[s], weight_at(rows, s, d), sum);
        out[d] = sum;
      }
  }
}

void weighted_row_sum(const float* weights, const WeightView& rows, float* out) {
  weighted_row_sum_at(kernel_level(), weights, rows, out);
}

void round_to_f16_at(KernelLevel level, float* values, std::int64_t count, std::uint16_t* bits) {
  if (level != KernelLevel::Portable) return round_to_f16_f16c(values, count, bits);
  for (std::int64_t i = 0; i < count; ++i) {
    const c10::Half half(values[i]);
    bits[i] = half.x;
    values[i] = static_cast<float>(half);
  }
}

void round_to_f16(float* values, std::int64_t count, std::uint16_t* bits) { round_to_f16_at(kernel_level(), values, count, bits); }

void softmax_scores_at(KernelLevel level, float* scores, const float* bias, float scale, std::int64_t count) {
  switch (level) {
    case KernelLevel::Avx512: return softmax_scores_avx512(scores, bias, scale, count);
    case KernelLevel::Avx2: return softmax_scores_avx2(scores, bias, scale, count);
    case KernelLevel::Portable: {
      float largest = -INFINITY;
      for (std::int64_t s = 0; s < count; ++s) largest = std::max(largest, scores[s] = std::fma(scores[s], scale, bias[s]));
      float total = 0.0f;
      for (std::int64_t s = 0; s < count; ++s) total += (scores[s] = std::exp(scores[s] - largest));
      for (std::int64_t s = 0; s < count; ++s) scores[s] /= total;
    }
  }
}

void softmax_scores(float* scores, const float* bias, float scale, std::int64_t count) {
  softmax_scores_at(kernel_level(), scores, bias, scale, count);
}

void silu_gate_at(KernelLevel level, float* gate, const float* up, std::int64_t count) {
  switch (level) {
    case KernelLevel::Avx512: return silu_gate_avx512(gate, up, count);
    case KernelLevel::Avx2: return silu_gate_avx2(gate, up, count);
    case KernelLevel::Portable:
      for (std::int64_t i = 0; i < count; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }
}

float from_f16_bits(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0) return bits_to_float(sign) + (sign ? -1.0f : 1.0f) * static_cast<float>(mantissa) * 5.9604644775390625e-08f;
  if (exponent == 31) return bits_to_float(sign | 0x7f800000 | (mantissa << 13));
  return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

QuantizedRows quantize_rows_q8(const float* x, int rows, std::int64_t in) {
  thread_local std::vector<std::int8_t> values;
  thread_local std::vector<float> scales;
  values.resize(static_cast<std::size_t>(rows * in));
  scales.resize(static_cast<std::size_t>(rows * (in / kQ8Block)));
  for (int r = 0; r < rows; ++r) quantize_q8_row(x + r * in, in, values.data() + r * in, scales.data() + r * (in / kQ8Block));
  return {values.data(), scales.data()};
}

void quantize_q8_row(const float* w, std::int64_t in, std::int8_t* q, float* scales) {
  for (std::int64_t b = 0; b < in / kQ8Block; ++b) {
    const float* block = w + b * kQ8Block;
    float largest = 0.0f;
    for (int i = 0; i < kQ8Block; ++i) largest = std::fmax(largest, std::fabs(block[i]));
    const float scale = largest / 127.0f;
    scales[b] = scale;
    for (int i = 0; i < kQ8Block; ++i)
      q[b * kQ8Block + i] = scale > 0.0f ? static_cast<std::int8_t>(std::lrint(block[i] / scale)) : 0;
  }
}

}  // namespace speculum
