// Built with AVX-512 F/BW/VL/VNNI (+ FMA, F16C); called only when the CPU has them (linear_kernels.cpp). Twice the
// AVX2 kernels' width, 32 vector registers (four-row tiles in every format), and 8-bit products by VNNI's vpdpbusd.
// GCC 12's AVX-512 intrinsics start some results from an undefined vector and warn about it themselves (GCC bug
// 105593); the warnings name no line of this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "models/linear_kernels_tiles.h"

namespace speculum {
namespace {

struct Avx512 {
  using Vec = __m512;
  static constexpr int kWidth = 16;
  template <WeightFormat>
  static constexpr int kRowTile = 4;

  static Vec broadcast(float v) { return _mm512_set1_ps(v); }
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec load_x(const float* x) { return _mm512_loadu_ps(x); }
  static void store(float* out, Vec v) { _mm512_storeu_ps(out, v); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec max(Vec a, Vec b) { return _mm512_max_ps(a, b); }
  static Vec round(Vec a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static Vec div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
  static Vec negate_abs(Vec a) { return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN))); }  // -|a|
  // a where x < 0 (its sign bit set), else b.
  static Vec negative_select(Vec x, Vec a, Vec b) {
    return _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(_mm512_castps_si512(x), _mm512_setzero_si512()), b, a);
  }
  // 2^n for whole n in [-126, 127], built in the exponent field.
  static Vec pow2(Vec n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  // v where x ≥ limit, else 0.
  static Vec zero_below(Vec v, Vec x, float limit) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, broadcast(limit), _CMP_GE_OQ), v); }
  static float reduce_max(Vec a) { return _mm512_reduce_max_ps(a); }
  static float reduce_add(Vec a) { return _mm_cvtss_f32(sum4(a, zero(), zero(), zero())); }

  template <WeightFormat F>
  static Vec load_weights(const void* w) {
    if constexpr (F == WeightFormat::F32) {
      return _mm512_loadu_ps(w);
    } else if constexpr (F == WeightFormat::F16) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(w)));
    } else {
      static_assert(F == WeightFormat::BF16, "8-bit weights take q8_tile");
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(w))), 16));
    }
  }
  // Sixteen 8-bit weights (within one block) times the block's scale.
  static Vec load_q8(const std::int8_t* q, float scale) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v)), _mm512_set1_ps(scale));
  }
  template <int J, int RT>
  static void q8_tile(const QuantizedRows& xq, const WeightView& w, const float* bias, float* y, int r0, std::int64_t j0);
  // Lane sums of four vectors: [Σa, Σb, Σc, Σd]. Within each 128-bit lane, pairs of elements, then the four vectors'
  // pair sums interleaved; then the four 128-bit lanes.
  static __m128 sum4(Vec a, Vec b, Vec c, Vec d) {
    const __m512d ab = _mm512_castps_pd(_mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b)));
    const __m512d cd = _mm512_castps_pd(_mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d)));
    const __m512 abcd = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(ab, cd)), _mm512_castpd_ps(_mm512_unpackhi_pd(ab, cd)));
    const __m256 halves = _mm256_add_ps(_mm512_castps512_ps256(abcd), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(abcd), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(halves), _mm256_extractf128_ps(halves, 1));
  }
};

// Two blocks' scales in one vector: the first in lanes 0-7, the second (0 when there is none) in lanes 8-15, the
// lanes whose integer sums vpdpbusd draws from each block's 32 bytes.
inline __m512 block_pair_scales(float first, float second) {
  return _mm512_mask_blend_ps(__mmask16{0xff00}, _mm512_set1_ps(first), _mm512_set1_ps(second));
}

// 8-bit weights times 8-bit activations (llama.cpp's Q8_0 · Q8_0), two blocks of 32 per 64-byte vector: vpdpbusd
// multiplies |x| (unsigned) by w with x's sign moved onto it and sums each four products into a 32-bit lane, so
// lanes 0-7 hold block b's partial sums and 8-15 block b + 1's; converted, scaled by each block's two scales and
// accumulated in float. A row with an odd number of blocks ends on a half-masked vector.
template <int J, int RT>
void Avx512::q8_tile(const QuantizedRows& xq, const WeightView& w, const float* bias, float* y, int r0, std::int64_t j0) {
  const std::int64_t in = w.in, blocks = in / kQ8Block;
  const auto* wq = static_cast<const std::int8_t*>(w.values);
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc[RT][J];
  for (int r = 0; r < RT; ++r)
    for (int j = 0; j < J; ++j) acc[r][j] = _mm512_setzero_ps();
  const auto block_pair = [&](std::int64_t b, __mmask64 bytes, bool pair) {
    if (j0 + 2 * J <= w.out)
      for (int j = 0; j < J; ++j) prefetch_row<WeightFormat::Q8>(w, j0 + J + j, b * kQ8Block);
    __m512i wv[J];
    __m512 ws[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      wv[j] = _mm512_maskz_loadu_epi8(bytes, wq + (j0 + j) * in + b * kQ8Block);
      const float* scales = w.scales + (j0 + j) * blocks + b;
      ws[j] = block_pair_scales(scales[0], pair ? scales[1] : 0.0f);
    }
#pragma GCC unroll 4
    for (int r = 0; r < RT; ++r) {
      const __m512i xv = _mm512_maskz_loadu_epi8(bytes, xq.values + (r0 + r) * in + b * kQ8Block);
      const __mmask64 negative = _mm512_movepi8_mask(xv);
      const __m512i magnitude = _mm512_abs_epi8(xv);
      const float* scales = xq.scales + (r0 + r) * blocks + b;
      const __m512 xs = block_pair_scales(scales[0], pair ? scales[1] : 0.0f);
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) {
        const __m512i signed_w = _mm512_mask_sub_epi8(wv[j], negative, zero, wv[j]);
        const __m512 dot = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, magnitude, signed_w));
        acc[r][j] = _mm512_fmadd_ps(dot, _mm512_mul_ps(xs, ws[j]), acc[r][j]);
      }
    }
  };
  std::int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) block_pair(b, ~__mmask64{0}, true);
  if (b < blocks) block_pair(b, __mmask64{0xffffffff}, false);
  store_sums<Avx512, J, RT>(acc, w, bias, y, r0, j0);
}

}  // namespace

void convert_weight_rows_avx512(const WeightView& w, std::int64_t first, std::int64_t last, float* out) {
  convert_rows<Avx512>(w, first, last, out);
}

void stream_linear_avx512(const float* x, const QuantizedRows& xq, int rows, const WeightView& w, const float* bias,
                          float* y, std::int64_t first, std::int64_t last) {
  run<Avx512>(x, xq, rows, w, bias, y, first, last);
}

void weighted_rows_avx512(const float* weights, const WeightView& rows, float* out) { weighted_rows<Avx512>(weights, rows, out); }

void softmax_scores_avx512(float* scores, const float* bias, float scale, std::int64_t count) {
  softmax_scores<Avx512>(scores, bias, scale, count);
}

void silu_gate_avx512(float* gate, const float* up, std::int64_t count) { silu_gate<Avx512>(gate, up, count); }

}  // namespace speculum
