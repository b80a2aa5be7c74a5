// Built with -mavx2 -mfma -mf16c; called only when the CPU has them (linear_kernels.cpp).
#include <immintrin.h>

#include "models/linear_kernels_tiles.h"

namespace speculum {
namespace {

struct Avx2 {
  using Vec = __m256;
  static constexpr int kWidth = 8;
  // Twelve f32 sums in registers; converting 16-bit weights leaves no room for them.
  template <WeightFormat F>
  static constexpr int kRowTile = F == WeightFormat::F32 ? 3 : 2;

  static Vec broadcast(float v) { return _mm256_set1_ps(v); }
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load_x(const float* x) { return _mm256_loadu_ps(x); }
  static void store(float* out, Vec v) { _mm256_storeu_ps(out, v); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec max(Vec a, Vec b) { return _mm256_max_ps(a, b); }
  static Vec round(Vec a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static Vec div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
  static Vec negate_abs(Vec a) { return _mm256_or_ps(a, broadcast(-0.0f)); }  // -|a|
  // a where x < 0 (its sign bit set), else b.
  static Vec negative_select(Vec x, Vec a, Vec b) { return _mm256_blendv_ps(b, a, x); }
  // 2^n for whole n in [-126, 127], built in the exponent field.
  static Vec pow2(Vec n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  // v where x ≥ limit, else 0.
  static Vec zero_below(Vec v, Vec x, float limit) { return _mm256_and_ps(v, _mm256_cmp_ps(x, broadcast(limit), _CMP_GE_OQ)); }
  static float reduce_max(Vec a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
  static float reduce_add(Vec a) { return _mm_cvtss_f32(sum4(a, zero(), zero(), zero())); }

  template <WeightFormat F>
  static Vec load_weights(const void* w) {
    if constexpr (F == WeightFormat::F32) {
      return _mm256_loadu_ps(static_cast<const float*>(w));
    } else if constexpr (F == WeightFormat::F16) {
      return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(w)));
    } else {
      static_assert(F == WeightFormat::BF16, "8-bit weights take q8_tile");
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(w))), 16));
    }
  }
  // Eight 8-bit weights times their block's scale.
  static Vec load_q8(const std::int8_t* q, float scale) {
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), _mm256_set1_ps(scale));
  }
  template <int J, int RT>
  static void q8_tile(const QuantizedRows& xq, const WeightView& w, const float* bias, float* y, int r0, std::int64_t j0);
  // Lane sums of four vectors: [Σa, Σb, Σc, Σd].
  static __m128 sum4(Vec a, Vec b, Vec c, Vec d) {
    const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
  }
};

// 8-bit weights times 8-bit activations (llama.cpp's Q8_0 · Q8_0): per block of 32, a dot product of integers
// (|x| · sign-adjusted w in 16-bit pairs, summed to 32-bit), converted once and scaled by the two blocks' scales.
// Converting every weight to float instead cost more than reading it: the product was bound by arithmetic.
template <int J, int RT>
void Avx2::q8_tile(const QuantizedRows& xq, const WeightView& w, const float* bias, float* y, int r0, std::int64_t j0) {
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
  store_sums<Avx2, J, RT>(acc, w, bias, y, r0, j0);
}


}  // namespace

void convert_weight_rows_avx2(const WeightView& w, std::int64_t first, std::int64_t last, float* out) {
  convert_rows<Avx2>(w, first, last, out);
}

void stream_linear_avx2(const float* x, const QuantizedRows& xq, int rows, const WeightView& w, const float* bias, float* y,
                        std::int64_t first, std::int64_t last) {
  run<Avx2>(x, xq, rows, w, bias, y, first, last);
}

void weighted_rows_avx2(const float* weights, const WeightView& rows, float* out) { weighted_rows<Avx2>(weights, rows, out); }

void softmax_scores_avx2(float* scores, const float* bias, float scale, std::int64_t count) {
  softmax_scores<Avx2>(scores, bias, scale, count);
}

void silu_gate_avx2(float* gate, const float* up, std::int64_t count) { silu_gate<Avx2>(gate, up, count); }

// F16C's conversion rounds to nearest, ties to even, as c10::Half's does; AVX-512 machines take it too.
void round_to_f16_f16c(float* values, std::int64_t count, std::uint16_t* bits) {
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(values + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bits + i), half);
    _mm256_storeu_ps(values + i, _mm256_cvtph_ps(half));
  }
  for (; i < count; ++i) {
    bits[i] = _cvtss_sh(values[i], _MM_FROUND_TO_NEAREST_INT);
    values[i] = _cvtsh_ss(bits[i]);
  }
}

}  // namespace speculum
