#include "models/linear_kernels.h"

#include <cmath>
#include <cstring>

namespace speculum {

// The AVX2 kernels live in linear_kernels_avx2.cpp, the one file built with -mavx2 -mfma -mf16c.
void stream_linear_avx2(const float* x, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first,
                        std::int64_t last);

namespace {

float bits_to_float(std::uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

float weight_at(const WeightView& w, std::int64_t j, std::int64_t k) {
  const std::int64_t i = j * w.in + k;
  switch (w.format) {
    case WeightFormat::F32: return static_cast<const float*>(w.values)[i];
    case WeightFormat::F16: return from_f16_bits(static_cast<const std::uint16_t*>(w.values)[i]);
    case WeightFormat::BF16: return bits_to_float(std::uint32_t{static_cast<const std::uint16_t*>(w.values)[i]} << 16);
    case WeightFormat::Q8: break;
  }
  return static_cast<const std::int8_t*>(w.values)[i] * w.scales[j * (w.in / kQ8Block) + k / kQ8Block];
}

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

}  // namespace

void stream_linear_portable(const float* x, int rows, const WeightView& w, const float* bias, float* y,
                            std::int64_t first, std::int64_t last) {
  for (std::int64_t j = first; j < last; ++j)
    for (int r = 0; r < rows; ++r) {
      const float* xr = x + static_cast<std::int64_t>(r) * w.in;
      float sum = 0.0f;
      for (std::int64_t k = 0; k < w.in; ++k) sum += xr[k] * weight_at(w, j, k);
      y[static_cast<std::int64_t>(r) * w.out + j] = bias ? sum + bias[j] : sum;
    }
}

bool stream_linear_vectorised() {
  static const bool has = cpu_has_avx2();
  return has;
}

void stream_linear(const float* x, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first,
                   std::int64_t last) {
  if (stream_linear_vectorised())
    stream_linear_avx2(x, rows, w, bias, y, first, last);
  else
    stream_linear_portable(x, rows, w, bias, y, first, last);
}

float from_f16_bits(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0) return bits_to_float(sign) + (sign ? -1.0f : 1.0f) * static_cast<float>(mantissa) * 5.9604644775390625e-08f;
  if (exponent == 31) return bits_to_float(sign | 0x7f800000 | (mantissa << 13));
  return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
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
