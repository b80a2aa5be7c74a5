// Weight-streaming matrix products for the few activation rows of a decode step: y = x · Wᵀ where W is
// read once, row by row, in its stored format (float32, float16, bfloat16, or 8-bit with one float32
// scale per 32 weights, llama.cpp's Q8_0 layout split into two arrays), converted in registers and never
// expanded into a float32 copy. With 8-bit weights the activations are quantised the same way (per row, per
// block of 32) and each block's product is a dot product of integers, as llama.cpp's Q8_0 · Q8_0. A GEMM packs W before every product, which for 1–16 rows costs
// more than the product itself (docs/benchmarks/studies.md, "Decode-step matrix products").
//
// AVX-512 (F, BW, VL, VNNI) or AVX2 + FMA + F16C when the CPU has them (checked once at run time), a plain loop
// otherwise. Each output is summed by one thread in a fixed order, so results do not depend on the thread count;
// the instruction sets sum in different orders, so tokens can differ between machines by a float's rounding
// unless the environment variable SPECULUM_KERNELS caps them alike (portable, avx2, avx512).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_config.h"

namespace speculum {

constexpr int kQ8Block = 32;  // weights per Q8 scale

// A row-major weight matrix [out, in] as the kernels read it. `values` points at float, uint16 (f16 / bf16
// bits) or int8 elements; `scales` at float [out, in / kQ8Block] for Q8. Only F32 may have an `in` that is
// not a multiple of 8 (Q8: of kQ8Block).
struct WeightView {
  WeightFormat format = WeightFormat::F32;
  const void* values = nullptr;
  const float* scales = nullptr;
  std::int64_t out = 0, in = 0;
};

// Activation rows quantised for 8-bit weights: int8 [rows, in] and float [rows, in / kQ8Block].
struct QuantizedRows {
  const std::int8_t* values = nullptr;
  const float* scales = nullptr;
};

// y [rows, out] = x [rows, in] · Wᵀ (+ bias [out] when not null); x and y row-major and contiguous. Output
// features [first, last) only, so callers can split the work across threads.
void stream_linear(const float* x, int rows, const WeightView& w, const float* bias, float* y, std::int64_t first,
                   std::int64_t last);

// Rows [first, last) of W as float32 into out [last - first, in] (q8: each weight times its block's scale): what a
// GEMM over many activation rows multiplies by, one block of features at a time. Vectorised like stream_linear.
void convert_weight_rows(const WeightView& w, std::int64_t first, std::int64_t last, float* out);

// The instruction sets the kernels are written for, from the plainest.
enum class KernelLevel { Portable, Avx2, Avx512 };
const char* kernel_level_name(KernelLevel level);
// The levels this CPU can run, Portable first.
std::vector<KernelLevel> supported_kernel_levels();
// The CPU's best level at most `cap` (a kernel_level_name; empty: no cap). An unknown name throws an Error naming
// the allowed ones; a level the CPU lacks caps at the CPU's best.
KernelLevel capped_kernel_level(const std::string& cap);
// The level stream_linear and convert_weight_rows run: capped_kernel_level(SPECULUM_KERNELS), read once.
KernelLevel kernel_level();

// stream_linear and convert_weight_rows at a given level (one of supported_kernel_levels()); `xq` is x quantised
// (quantize_q8_row per row) when w is Q8, else unused.
void stream_linear_at(KernelLevel level, const float* x, const QuantizedRows& xq, int rows, const WeightView& w,
                      const float* bias, float* y, std::int64_t first, std::int64_t last);
void convert_weight_rows_at(KernelLevel level, const WeightView& w, std::int64_t first, std::int64_t last, float* out);

// out [hd] = Σ_s weights[s] · rows[s] for rows [count, hd] row-major, a WeightView in F32 or F16 with out = count and
// in = hd (one query's attention: its probabilities times the cached values), at kernel_level(); at a given level for
// tests. Other formats throw an Error.
void weighted_row_sum(const float* weights, const WeightView& rows, float* out);
void weighted_row_sum_at(KernelLevel level, const float* weights, const WeightView& rows, float* out);

// values [count] rounded to IEEE half in place, their half bits into `bits`: to nearest with ties to even, as LibTorch's
// own conversion rounds (so a cache slot written here holds what a tensor copy would write), at kernel_level(); at a
// given level for tests.
void round_to_f16(float* values, std::int64_t count, std::uint16_t* bits);
void round_to_f16_at(KernelLevel level, float* values, std::int64_t count, std::uint16_t* bits);

// scores [count] ← softmax(scores · scale + bias [count]) in place (one query's attention weights; a bias of -∞ masks a
// slot), at kernel_level(); at a given level for tests. The vector levels use their own e^x (within two ulps of
// std::exp), so the weights differ from the portable loop's by a float's rounding.
void softmax_scores(float* scores, const float* bias, float scale, std::int64_t count);
void softmax_scores_at(KernelLevel level, float* scores, const float* bias, float scale, std::int64_t count);

// gate[i] ← silu(gate[i]) · up[i] for i < count (the feed-forward's gate), at a given level; silu_gate_raw
// (decode_loops.h) runs it at kernel_level().
void silu_gate_at(KernelLevel level, float* gate, const float* up, std::int64_t count);

// x [rows, in] quantised with quantize_q8_row, row by row, into this thread's buffers (valid until its next call).
QuantizedRows quantize_rows_q8(const float* x, int rows, std::int64_t in);

// IEEE half bits -> float32.
float from_f16_bits(std::uint16_t h);
// Per-block 8-bit quantisation of one row (of weights, or of activations for 8-bit weights): scale = max |w| / 127
// per block of kQ8Block, q = round(w / scale) in [-127, 127]; `in` a multiple of kQ8Block.
void quantize_q8_row(const float* w, std::int64_t in, std::int8_t* q, float* scales);

}  // namespace speculum
