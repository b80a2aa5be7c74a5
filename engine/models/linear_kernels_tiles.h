// The streaming kernels' float tiles, written once over an instruction set: `Isa` supplies the vector type, its
// width, loads of activations and of weights in each 16/32-bit format, a fused multiply-add, the lane sums of four
// vectors at once and its 8-bit tile;
// linear_kernels_avx2.cpp and linear_kernels_avx512.cpp each define one and include this file. Everything here has
// internal linkage: each of those files is built with its own instruction-set flags, so no function may be shared
// between them by the linker.
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "models/linear_kernels.h"

namespace speculum {
namespace {

template <WeightFormat F>
constexpr int kElementBytes = F == WeightFormat::F32 ? 4 : F == WeightFormat::Q8 ? 1 : 2;

// Asks for the cache line of row j at column k ahead of its use: the next tile's rows, one tile ahead.
template <WeightFormat F>
inline void prefetch_row(const WeightView& w, std::int64_t j, std::int64_t k) {
  _mm_prefetch(static_cast<const char*>(w.values) + (j * w.in + k) * kElementBytes<F>, _MM_HINT_T0);
}

// The weights' elements of row j from column k, as the format stores them.
template <WeightFormat F>
inline const void* weights_at(const WeightView& w, std::int64_t j, std::int64_t k) {
  return static_cast<const char*>(w.values) + (j * w.in + k) * kElementBytes<F>;
}

// The last `count` (< the vector width) activations or weights of a row, zero-padded to a whole vector: only rows
// whose length is not a multiple of the width take it, once per tile.
template <class Isa>
inline typename Isa::Vec load_x_part(const float* x, std::int64_t count) {
  alignas(64) float padded[Isa::kWidth] = {};
  std::memcpy(padded, x, static_cast<std::size_t>(count) * sizeof(float));
  return Isa::load_x(padded);
}

template <class Isa, WeightFormat F>
inline typename Isa::Vec load_weights_part(const void* w, std::int64_t count) {
  alignas(64) char padded[Isa::kWidth * kElementBytes<F>] = {};
  std::memcpy(padded, w, static_cast<std::size_t>(count) * kElementBytes<F>);
  return Isa::template load_weights<F>(padded);
}

// The sums of RT × J accumulators (J = 1 or 4) written to y with the bias: four at a time through Isa::sum4, which
// adds each vector's lanes in a tree that never mixes two vectors, so a lone feature (summed beside zeros) gets the
// same bits as it would in a group of four. Reducing the four together costs a third of four separate reductions,
// which on short rows (a head of 48, a model of 192) are as dear as the multiply-adds.
template <class Isa, int J, int RT>
inline void store_sums(const typename Isa::Vec (&acc)[RT][J], const WeightView& w, const float* bias, float* y, int r0,
                       std::int64_t j0) {
  static_assert(J == 1 || J == 4, "tiles are one or four features wide");
  for (int r = 0; r < RT; ++r) {
    float* out = y + (r0 + r) * w.out + j0;
    if constexpr (J == 4) {
      __m128 sums = Isa::sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
      if (bias) sums = _mm_add_ps(sums, _mm_loadu_ps(bias + j0));
      _mm_storeu_ps(out, sums);
    } else {
      const typename Isa::Vec zero = Isa::zero();
      const float sum = _mm_cvtss_f32(Isa::sum4(acc[r][0], zero, zero, zero));
      *out = bias ? sum + bias[j0] : sum;
    }
  }
}

// Outputs of J consecutive features for RT consecutive rows. Each output's sum runs in the same order whatever J
// and RT are, so the tiling (and the thread split) never changes a result.
template <class Isa, WeightFormat F, int J, int RT>
inline void tile(const float* x, const WeightView& w, const float* bias, float* y, int r0, std::int64_t j0) {
  using Vec = typename Isa::Vec;
  constexpr int width = Isa::kWidth;
  Vec acc[RT][J];
  for (int r = 0; r < RT; ++r)
    for (int j = 0; j < J; ++j) acc[r][j] = Isa::zero();
  const std::int64_t in = w.in, vector_end = in - in % width;
  for (std::int64_t k = 0; k < vector_end; k += width) {
    if (k % (64 / kElementBytes<F>) == 0 && j0 + 2 * J <= w.out)
      for (int j = 0; j < J; ++j) prefetch_row<F>(w, j0 + J + j, k);
    Vec wv[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) wv[j] = Isa::template load_weights<F>(weights_at<F>(w, j0 + j, k));
#pragma GCC unroll 4
    for (int r = 0; r < RT; ++r) {
      const Vec xv = Isa::load_x(x + (r0 + r) * in + k);
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) acc[r][j] = Isa::fmadd(xv, wv[j], acc[r][j]);
    }
  }
  if (vector_end < in) {  // the same multiply-adds over a zero-padded last vector
    const std::int64_t count = in - vector_end;
    for (int j = 0; j < J; ++j) {
      const Vec wv = load_weights_part<Isa, F>(weights_at<F>(w, j0 + j, vector_end), count);
      for (int r = 0; r < RT; ++r) acc[r][j] = Isa::fmadd(load_x_part<Isa>(x + (r0 + r) * in + vector_end, count), wv, acc[r][j]);
    }
  }
  store_sums<Isa, J, RT>(acc, w, bias, y, r0, j0);
}

// Rows in tiles of up to Isa::kRowTile<F> (a decode step has 1 or 2 rows, CFG's two streams; verification passes a
// few more): each tile reads the four features' weights once more, from the L1 cache after the first. While one tile
// runs, the next tile's weights are prefetched: without it the product read the weights from memory at half the rate
// a plain sum does (bench --kernels, "from memory").
template <class Isa, WeightFormat F>
void run_float(const float* x, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first,
               std::int64_t last) {
  constexpr int row_tile = Isa::template kRowTile<F>;
  std::int64_t j = first;
  for (; j + 4 <= last; j += 4) {
    int r = 0;
    if constexpr (row_tile >= 4)
      for (; r + 4 <= rows; r += 4) tile<Isa, F, 4, 4>(x, w, bias, y, r, j);
    if constexpr (row_tile >= 3)
      for (; r + 3 <= rows; r += 3) tile<Isa, F, 4, 3>(x, w, bias, y, r, j);
    for (; r + 2 <= rows; r += 2) tile<Isa, F, 4, 2>(x, w, bias, y, r, j);
    if (r < rows) tile<Isa, F, 4, 1>(x, w, bias, y, r, j);
  }
  for (; j < last; ++j) {
    int r = 0;
    for (; r + 2 <= rows; r += 2) tile<Isa, F, 1, 2>(x, w, bias, y, r, j);
    if (r < rows) tile<Isa, F, 1, 1>(x, w, bias, y, r, j);
  }
}

// 8-bit weights: Isa::q8_tile<J, RT> multiplies RT quantised rows by J features' weights; rows in pairs, features
// in fours as for the float formats.
template <class Isa>
void run_q8(const QuantizedRows& xq, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first,
            std::int64_t last) {
  std::int64_t j = first;
  for (; j + 4 <= last; j += 4) {
    int r = 0;
    for (; r + 2 <= rows; r += 2) Isa::template q8_tile<4, 2>(xq, w, bias, y, r, j);
    if (r < rows) Isa::template q8_tile<4, 1>(xq, w, bias, y, r, j);
  }
  for (; j < last; ++j)
    for (int r = 0; r < rows; ++r) Isa::template q8_tile<1, 1>(xq, w, bias, y, r, j);
}

// Weights [k, k + count) of row j as float32 into out, count ≤ the vector width (fewer only at a row's end).
template <class Isa, WeightFormat F>
inline void convert_vector(const WeightView& w, std::int64_t j, std::int64_t k, std::int64_t count, float* out) {
  if (count == Isa::kWidth) return Isa::store(out, Isa::template load_weights<F>(weights_at<F>(w, j, k)));
  alignas(64) float padded[Isa::kWidth];
  Isa::store(padded, load_weights_part<Isa, F>(weights_at<F>(w, j, k), count));
  std::memcpy(out, padded, static_cast<std::size_t>(count) * sizeof(float));
}

// Rows [first, last) of W as float32, a vector at a time: 16-bit rows are a multiple of 8 long, 8-bit rows of
// kQ8Block (so a q8 vector never straddles two scales); f32 rows are copied by the caller.
template <class Isa>
void convert_rows(const WeightView& w, std::int64_t first, std::int64_t last, float* out) {
  for (std::int64_t j = first; j < last; ++j)
    for (std::int64_t k = 0; k < w.in; k += Isa::kWidth) {
      const std::int64_t count = std::min<std::int64_t>(Isa::kWidth, w.in - k);
      float* at = out + (j - first) * w.in + k;
      switch (w.format) {
        case WeightFormat::F16: convert_vector<Isa, WeightFormat::F16>(w, j, k, count, at); break;
        case WeightFormat::BF16: convert_vector<Isa, WeightFormat::BF16>(w, j, k, count, at); break;
        case WeightFormat::F32: convert_vector<Isa, WeightFormat::F32>(w, j, k, count, at); break;
        case WeightFormat::Q8:
          Isa::store(at, Isa::load_q8(static_cast<const std::int8_t*>(w.values) + j * w.in + k,
                                      w.scales[j * (w.in / kQ8Block) + k / kQ8Block]));
          break;
      }
    }
}

// out [hd] = Σ_s weights[s] · rows[s] for rows [count, hd] (a WeightView of count × hd in F32 or F16): up to four
// vectors of out stay in registers while every row streams past once; a row length that is not a multiple of the
// width ends on a zero-padded vector. Each element's sum runs over s in order, as the portable loop's does.
template <class Isa, WeightFormat F>
void weighted_rows(const float* weights, const WeightView& rows, float* out) {
  using Vec = typename Isa::Vec;
  constexpr int width = Isa::kWidth;
  const std::int64_t count = rows.out, hd = rows.in;
  for (std::int64_t d = 0; d < hd;) {
    const std::int64_t left = hd - d;
    const int vectors = static_cast<int>(std::min<std::int64_t>(4, (left + width - 1) / width));
    const bool padded = left < std::int64_t{vectors} * width;  // the last vector is partial
    Vec acc[4] = {Isa::zero(), Isa::zero(), Isa::zero(), Isa::zero()};
    for (std::int64_t s = 0; s < count; ++s) {
      const Vec weight = Isa::broadcast(weights[s]);
      for (int v = 0; v < vectors; ++v) {
        const void* row = weights_at<F>(rows, s, d + v * width);
        const Vec values = padded && v == vectors - 1 ? load_weights_part<Isa, F>(row, left - v * width)
                                                      : Isa::template load_weights<F>(row);
        acc[v] = Isa::fmadd(weight, values, acc[v]);
      }
    }
    for (int v = 0; v < vectors; ++v) {
      if (padded && v == vectors - 1) {
        alignas(64) float last[width];
        Isa::store(last, acc[v]);
        std::memcpy(out + d + v * width, last, static_cast<std::size_t>(left - v * width) * sizeof(float));
      } else {
        Isa::store(out + d + v * width, acc[v]);
      }
    }
    d += std::min<std::int64_t>(left, std::int64_t{vectors} * width);
  }
}

template <class Isa>
void weighted_rows(const float* weights, const WeightView& rows, float* out) {
  if (rows.format == WeightFormat::F16) return weighted_rows<Isa, WeightFormat::F16>(weights, rows, out);
  weighted_rows<Isa, WeightFormat::F32>(weights, rows, out);
}

// e^x for x ≤ 0 (Cephes' expf: x = n·ln 2 + r with |r| ≤ ln 2 / 2, a degree-7 polynomial in r, times 2^n): within
// two float ulps of std::exp; below e^-87 (no normal float left) and for -∞ it is exactly 0.
template <class Isa>
inline typename Isa::Vec exp_nonpositive(typename Isa::Vec x) {
  using Vec = typename Isa::Vec;
  const Vec clamped = Isa::max(x, Isa::broadcast(-87.0f));
  const Vec n = Isa::round(Isa::mul(clamped, Isa::broadcast(1.44269504088896341f)));
  Vec r = Isa::fmadd(n, Isa::broadcast(-0.693359375f), clamped);
  r = Isa::fmadd(n, Isa::broadcast(2.12194440e-4f), r);
  Vec y = Isa::broadcast(1.9875691500e-4f);
  y = Isa::fmadd(y, r, Isa::broadcast(1.3981999507e-3f));
  y = Isa::fmadd(y, r, Isa::broadcast(8.3334519073e-3f));
  y = Isa::fmadd(y, r, Isa::broadcast(4.1665795894e-2f));
  y = Isa::fmadd(y, r, Isa::broadcast(1.6666665459e-1f));
  y = Isa::fmadd(y, r, Isa::broadcast(5.0000001201e-1f));
  y = Isa::fmadd(y, Isa::mul(r, r), Isa::add(r, Isa::broadcast(1.0f)));
  return Isa::zero_below(Isa::mul(y, Isa::pow2(n)), x, -87.0f);
}

// scores[s] ← softmax(scores · scale + bias)[s] over count scores, in place: the scaled scores and their maximum, then
// e^(score − maximum) and their sum, then the division. A partial last vector is padded with -∞ (e^-∞ = 0).
template <class Isa>
void softmax_scores(float* scores, const float* bias, float scale, std::int64_t count) {
  using Vec = typename Isa::Vec;
  constexpr int width = Isa::kWidth;
  const std::int64_t vector_end = count - count % width, tail = count - vector_end;
  alignas(64) float last[width];
  const auto load_tail = [&](const float* from) {
    std::fill(last, last + width, -INFINITY);
    std::memcpy(last, from, static_cast<std::size_t>(tail) * sizeof(float));
    return Isa::load_x(last);
  };
  Vec largest = Isa::broadcast(-INFINITY);
  for (std::int64_t s = 0; s < vector_end; s += width) {
    const Vec v = Isa::fmadd(Isa::load_x(scores + s), Isa::broadcast(scale), Isa::load_x(bias + s));
    Isa::store(scores + s, v);
    largest = Isa::max(largest, v);
  }
  for (std::int64_t s = vector_end; s < count; ++s) {
    scores[s] = std::fma(scores[s], scale, bias[s]);
    largest = Isa::max(largest, Isa::broadcast(scores[s]));
  }
  const Vec shift = Isa::broadcast(Isa::reduce_max(largest));
  Vec total = Isa::zero();
  for (std::int64_t s = 0; s < vector_end; s += width) {
    const Vec e = exp_nonpositive<Isa>(Isa::sub(Isa::load_x(scores + s), shift));
    Isa::store(scores + s, e);
    total = Isa::add(total, e);
  }
  if (tail) {
    const Vec e = exp_nonpositive<Isa>(Isa::sub(load_tail(scores + vector_end), shift));
    Isa::store(last, e);
    std::memcpy(scores + vector_end, last, static_cast<std::size_t>(tail) * sizeof(float));
    total = Isa::add(total, e);
  }
  const float inverse = 1.0f / Isa::reduce_add(total);
  for (std::int64_t s = 0; s < vector_end; s += width) Isa::store(scores + s, Isa::mul(Isa::load_x(scores + s), Isa::broadcast(inverse)));
  for (std::int64_t s = vector_end; s < count; ++s) scores[s] *= inverse;
}

// gate[i] ← silu(gate[i]) · up[i]: silu(g) = g / (1 + e^-g), from e = e^-|g| as g / (1 + e) for g ≥ 0 and g · e / (1 + e)
// below, so the exponential never overflows. A partial last vector is padded with zeros.
template <class Isa>
void silu_gate(float* gate, const float* up, std::int64_t count) {
  using Vec = typename Isa::Vec;
  constexpr int width = Isa::kWidth;
  const auto apply = [](Vec g, Vec u) {
    const Vec e = exp_nonpositive<Isa>(Isa::negate_abs(g));
    const Vec ratio = Isa::div(Isa::negative_select(g, Isa::mul(g, e), g), Isa::add(Isa::broadcast(1.0f), e));
    return Isa::mul(ratio, u);
  };
  std::int64_t i = 0;
  for (; i + width <= count; i += width) Isa::store(gate + i, apply(Isa::load_x(gate + i), Isa::load_x(up + i)));
  if (i < count) {
    alignas(64) float last[width];
    Isa::store(last, apply(load_x_part<Isa>(gate + i, count - i), load_x_part<Isa>(up + i, count - i)));
    std::memcpy(gate + i, last, static_cast<std::size_t>(count - i) * sizeof(float));
  }
}

template <class Isa>
void run(const float* x, const QuantizedRows& xq, int rows, const WeightView& w, const float* bias, float* y,
         std::int64_t first, std::int64_t last) {
  switch (w.format) {
    case WeightFormat::F32: return run_float<Isa, WeightFormat::F32>(x, rows, w, bias, y, first, last);
    case WeightFormat::F16: return run_float<Isa, WeightFormat::F16>(x, rows, w, bias, y, first, last);
    case WeightFormat::BF16: return run_float<Isa, WeightFormat::BF16>(x, rows, w, bias, y, first, last);
    case WeightFormat::Q8: return run_q8<Isa>(xq, rows, w, bias, y, first, last);
  }
}

}  // namespace
}  // namespace speculum
