#include "models/linear_kernels.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace speculum {

// The AVX2 kernels live in linear_kernels_avx2.cpp, the one file built with -mavx2 -mfma -mf16c.
void stream_linear_avx2(const float* x, const QuantizedRows& xq, int rows, const WeightView& w, const float* bias, float* y,
                        std::int64_t first, std::int64_t last);
void convert_weight_rows_avx2(const WeightView& w, std::int64_t first, std::int64_t last, float* out);

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

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

}  // namespace

void stream_linear_portable(const float* x, const QuantizedRows& xq, int rows, const WeightView& w, const float* bias,
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

bool stream_linear_vectorised() {
  static const bool has = cpu_has_avx2();
  return has;
}

void stream_linear(const float* x, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first,
                   std::int64_t last) {
  // Each thread quantises the rows it multiplies: a few hundred activations against a whole matrix of weights.
  const QuantizedRows xq = w.format == WeightFormat::Q8 ? quantize_rows_q8(x, rows, w.in) : QuantizedRows{};
  if (stream_linear_vectorised())
    stream_linear_avx2(x, xq, rows, w, bias, y, first, last);
  else
    stream_linear_portable(x, xq, rows, w, bias, y, first, last);
}

void convert_weight_rows_portable(const WeightView& w, std::int64_t first, std::int64_t last, float* out) {
  for (std::int64_t j = first; j < last; ++j)
    for (std::int64_t k = 0; k < w.in; ++k)
      *out++ = w.format == WeightFormat::Q8
                   ? static_cast<const std::int8_t*>(w.values)[j * w.in + k] * w.scales[j * (w.in / kQ8Block) + k / kQ8Block]
                   : weight_at(w, j, k);
}

void convert_weight_rows(const WeightView& w, std::int64_t first, std::int64_t last, float* out) {
  if (w.format == WeightFormat::F32)
    std::memcpy(out, static_cast<const float*>(w.values) + first * w.in, static_cast<std::size_t>((last - first) * w.in) * sizeof(float));
  else if (stream_linear_vectorised())
    convert_weight_rows_avx2(w, first, last, out);
  else
    convert_weight_rows_portable(w, first, last, out);
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
