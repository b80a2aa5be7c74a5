// Built with -mavx2 -mfma -mf16c; called only when the CPU has them (linear_kernels.cpp).
#include <immintrin.h>

#include "models/linear_kernels.h"

namespace speculum {
namespace {

// Eight weights of row j from column k, as float32.
template <WeightFormat F>
inline __m256 load8(const WeightView& w, std::int64_t j, std::int64_t k) {
  const std::int64_t i = j * w.in + k;
  if constexpr (F == WeightFormat::F32) {
    return _mm256_loadu_ps(static_cast<const float*>(w.values) + i);
  } else if constexpr (F == WeightFormat::F16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(w.values) + i)));
  } else if constexpr (F == WeightFormat::BF16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(w.values) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(static_cast<const std::int8_t*>(w.values) + i));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)),
                         _mm256_broadcast_ss(w.scales + j * (w.in / kQ8Block) + k / kQ8Block));
  }
}

inline float horizontal_sum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// Outputs of J consecutive features for RT consecutive rows. Each output's sum runs in the same order
// whatever J and RT are, so the tiling (and the thread split) never changes a result.
template <WeightFormat F, int J, int RT>
inline void tile(const float* x, const WeightView& w, const float* bias, float* y, int r0, std::int64_t j0) {
  __m256 acc[RT][J];
  for (int r = 0; r < RT; ++r)
    for (int j = 0; j < J; ++j) acc[r][j] = _mm256_setzero_ps();
  const std::int64_t in = w.in, vector_end = in - in % 8;
  for (std::int64_t k = 0; k < vector_end; k += 8) {
    __m256 wv[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) wv[j] = load8<F>(w, j0 + j, k);
#pragma GCC unroll 2
    for (int r = 0; r < RT; ++r) {
      const __m256 xv = _mm256_loadu_ps(x + (r0 + r) * in + k);
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) acc[r][j] = _mm256_fmadd_ps(xv, wv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < RT; ++r)
    for (int j = 0; j < J; ++j) {
      float sum = horizontal_sum(acc[r][j]);
      if constexpr (F == WeightFormat::F32)  // only f32 rows may have a length that is not a multiple of 8
        for (std::int64_t k = vector_end; k < in; ++k) sum += x[(r0 + r) * in + k] * static_cast<const float*>(w.values)[(j0 + j) * in + k];
      y[(r0 + r) * w.out + j0 + j] = bias ? sum + bias[j0 + j] : sum;
    }
}

// Rows in pairs: each pair reads the weights once more, from the cache after the first (a decode step has 1 or 2
// rows, CFG's two streams; verification passes a few more).
template <WeightFormat F>
void run(const float* x, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first, std::int64_t last) {
  std::int64_t j = first;
  for (; j + 4 <= last; j += 4) {
    int r = 0;
    for (; r + 2 <= rows; r += 2) tile<F, 4, 2>(x, w, bias, y, r, j);
    if (r < rows) tile<F, 4, 1>(x, w, bias, y, r, j);
  }
  for (; j < last; ++j) {
    int r = 0;
    for (; r + 2 <= rows; r += 2) tile<F, 1, 2>(x, w, bias, y, r, j);
    if (r < rows) tile<F, 1, 1>(x, w, bias, y, r, j);
  }
}

}  // namespace

void stream_linear_avx2(const float* x, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first,
                        std::int64_t last) {
  switch (w.format) {
    case WeightFormat::F32: return run<WeightFormat::F32>(x, rows, w, bias, y, first, last);
    case WeightFormat::F16: return run<WeightFormat::F16>(x, rows, w, bias, y, first, last);
    case WeightFormat::BF16: return run<WeightFormat::BF16>(x, rows, w, bias, y, first, last);
    case WeightFormat::Q8: return run<WeightFormat::Q8>(x, rows, w, bias, y, first, last);
  }
}

}  // namespace speculum
