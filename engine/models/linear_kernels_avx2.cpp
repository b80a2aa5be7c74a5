// Built with -mavx2 -mfma -mf16c; called only when the CPU has them (linear_kernels.cpp).
#include <immintrin.h>

#include "models/linear_kernels.h"

namespace speculum {
namespace {

// Eight weights of row j from column k, as float32 (16- and 32-bit formats).
template <WeightFormat F>
inline __m256 load8(const WeightView& w, std::int64_t j, std::int64_t k) {
  const std::int64_t i = j * w.in + k;
  if constexpr (F == WeightFormat::F32) {
    return _mm256_loadu_ps(static_cast<const float*>(w.values) + i);
  } else if constexpr (F == WeightFormat::F16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(w.values) + i)));
  } else {
    static_assert(F == WeightFormat::BF16, "8-bit weights take q8_tile");
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(w.values) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <WeightFormat F>
constexpr int kElementBytes = F == WeightFormat::F32 ? 4 : F == WeightFormat::Q8 ? 1 : 2;

// Asks for the cache line of row j at column k ahead of its use: the next tile's rows, one tile ahead.
template <WeightFormat F>
inline void prefetch_row(const WeightView& w, std::int64_t j, std::int64_t k) {
  _mm_prefetch(static_cast<const char*>(w.values) + (j * w.in + k) * kElementBytes<F>, _MM_HINT_T0);
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
    if (k % (64 / kElementBytes<F>) == 0 && j0 + 2 * J <= w.out)
      for (int j = 0; j < J; ++j) prefetch_row<F>(w, j0 + J + j, k);
    __m256 wv[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) wv[j] = load8<F>(w, j0 + j, k);
#pragma GCC unroll 3
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

// 8-bit weights times 8-bit activations (llama.cpp's Q8_0 · Q8_0): per block of 32, a dot product of integers
// (|x| · sign-adjusted w in 16-bit pairs, summed to 32-bit), converted once and scaled by the two blocks' scales.
// Converting every weight to float instead cost more than reading it: the product was bound by arithmetic.
template <int J, int RT>
inline void q8_tile(const QuantizedRows& xq, const WeightView& w, const float* bias, float* y, int r0, std::int64_t j0) {
  const std::int64_t in = w.in, blocks = in / kQ8Block;
  const auto* wq = static_cast<const std::int8_t*>(w.values);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[RT][J];
  for (int r = 0; r < RT; ++r)
    for (int j = 0; j < J; ++j) acc[r][j] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < blocks; ++b) {
    if (b % 2 == 0 && j0 + 2 * J <= w.out)
      for (int j = 0; j < J; ++j) prefetch_row<WeightFormat::Q8>(w, j0 + J + j, b * kQ8Block);
    __m256i wv[J];
    float ws[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      wv[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq + (j0 + j) * in + b * kQ8Block));
      ws[j] = w.scales[(j0 + j) * blocks + b];
    }
#pragma GCC unroll 2
    for (int r = 0; r < RT; ++r) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq.values + (r0 + r) * in + b * kQ8Block));
      const __m256i magnitude = _mm256_sign_epi8(xv, xv);
      const float xs = xq.scales[(r0 + r) * blocks + b];
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) {
        const __m256i pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(wv[j], xv));
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
        acc[r][j] = _mm256_fmadd_ps(dot, _mm256_set1_ps(xs * ws[j]), acc[r][j]);
      }
    }
  }
  for (int r = 0; r < RT; ++r)
    for (int j = 0; j < J; ++j) {
      const float sum = horizontal_sum(acc[r][j]);
      y[(r0 + r) * w.out + j0 + j] = bias ? sum + bias[j0 + j] : sum;
    }
}

void run_q8(const QuantizedRows& xq, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first,
            std::int64_t last) {
  std::int64_t j = first;
  for (; j + 4 <= last; j += 4) {
    int r = 0;
    for (; r + 2 <= rows; r += 2) q8_tile<4, 2>(xq, w, bias, y, r, j);
    if (r < rows) q8_tile<4, 1>(xq, w, bias, y, r, j);
  }
  for (; j < last; ++j)
    for (int r = 0; r < rows; ++r) q8_tile<1, 1>(xq, w, bias, y, r, j);
}

// Rows in threes (f32) or pairs: each group reads the four features' weights once more, from the L1 cache after the
// first (a decode step has 1 or 2 rows, CFG's two streams; verification passes a few more). While one tile runs, the
// next tile's weights are prefetched: without it the product read the weights from memory at half the rate a
// plain sum does (bench --kernels, "from memory").
template <WeightFormat F>
void run(const float* x, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first, std::int64_t last) {
  std::int64_t j = first;
  for (; j + 4 <= last; j += 4) {
    int r = 0;
    if constexpr (F == WeightFormat::F32)  // twelve sums in registers; converting 16-bit weights leaves no room for them
      for (; r + 3 <= rows; r += 3) tile<F, 4, 3>(x, w, bias, y, r, j);
    for (; r + 2 <= rows; r += 2) tile<F, 4, 2>(x, w, bias, y, r, j);
    if (r < rows) tile<F, 4, 1>(x, w, bias, y, r, j);
  }
  for (; j < last; ++j) {
    int r = 0;
    for (; r + 2 <= rows; r += 2) tile<F, 1, 2>(x, w, bias, y, r, j);
    if (r < rows) tile<F, 1, 1>(x, w, bias, y, r, j);
  }
}

// Eight 8-bit weights of row j from column k times their block's scale.
inline __m256 load8_q8(const WeightView& w, std::int64_t j, std::int64_t k) {
  const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(static_cast<const std::int8_t*>(w.values) + j * w.in + k));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_set1_ps(w.scales[j * (w.in / kQ8Block) + k / kQ8Block]));
}

}  // namespace

void convert_weight_rows_avx2(const WeightView& w, std::int64_t first, std::int64_t last, float* out) {
  for (std::int64_t j = first; j < last; ++j)
    for (std::int64_t k = 0; k < w.in; k += 8, out += 8) {  // `in` is a multiple of 8 for every non-f32 format
      switch (w.format) {
        case WeightFormat::F16: _mm256_storeu_ps(out, load8<WeightFormat::F16>(w, j, k)); break;
        case WeightFormat::BF16: _mm256_storeu_ps(out, load8<WeightFormat::BF16>(w, j, k)); break;
        case WeightFormat::Q8: _mm256_storeu_ps(out, load8_q8(w, j, k)); break;
        case WeightFormat::F32: _mm256_storeu_ps(out, load8<WeightFormat::F32>(w, j, k)); break;
      }
    }
}

void stream_linear_avx2(const float* x, const QuantizedRows& xq, int rows, const WeightView& w, const float* bias, float* y,
                        std::int64_t first, std::int64_t last) {
  switch (w.format) {
    case WeightFormat::F32: return run<WeightFormat::F32>(x, rows, w, bias, y, first, last);
    case WeightFormat::F16: return run<WeightFormat::F16>(x, rows, w, bias, y, first, last);
    case WeightFormat::BF16: return run<WeightFormat::BF16>(x, rows, w, bias, y, first, last);
    case WeightFormat::Q8: return run_q8(xq, rows, w, bias, y, first, last);
  }
}

}  // namespace speculum
