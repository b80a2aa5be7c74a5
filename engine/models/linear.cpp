#include "models/linear.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>

#include "error.h"
#include "models/step_team.h"

namespace speculum {
namespace {

// Output features per block of a many-row product over converted weights: a bounded f32 scratch (4 MB at 1024 inputs)
// rather than a copy of the matrix. 256-feature blocks made the default model's 32-token pass 9 % slower than whole
// matrices (all of its matrices have ≤ 1024 outputs); on GPT-B 1024 and 4096 measured alike.
constexpr std::int64_t kConvertedBlockFeatures = 1024;

// Multiply-adds a product must have per thread before at::parallel_for gives it a second one: under
// OMP_WAIT_POLICY=PASSIVE a fork costs ~10 µs, so the default model's matrices (≤ 0.2 M) stay on one thread and
// GPT-B's (≥ 1.5 M) split (bench --kernels).
constexpr std::int64_t kMinWorkPerThread = 1 << 19;

WeightView view_of(const LinearWeight& w) {
  return {w.format(), w.values.data_ptr(), w.scales.defined() ? w.scales.data_ptr<float>() : nullptr, w.out_features(),
          w.in_features()};
}

// The kernels tile kTileFeatures output features: work is split in whole blocks of them, so a split never changes a
// sum (linear_kernels.h).
constexpr std::int64_t kTileFeatures = 4;
std::int64_t feature_blocks(const WeightView& view) { return (view.out + kTileFeatures - 1) / kTileFeatures; }
void stream_blocks(const float* x, int rows, const WeightView& view, const float* bias, float* y, std::int64_t first,
                   std::int64_t last) {
  stream_linear(x, rows, view, bias, y, first * kTileFeatures, std::min(last * kTileFeatures, view.out));
}

bool wants_gradient(const at::Tensor& x, const LinearWeight& w, const at::Tensor& bias) {
  return at::GradMode::is_enabled() &&
         (x.requires_grad() || w.values.requires_grad() || (bias.defined() && bias.requires_grad()));
}

at::Tensor converted_weight_rows(const LinearWeight& w, std::int64_t first, std::int64_t count) {
  // f32 as it is; 16-bit on the GPU by LibTorch (q8 stays on the CPU)
  if (w.format() == WeightFormat::F32 || w.values.is_cuda()) return w.values.narrow(0, first, count).to(at::kFloat);
  at::Tensor out = at::empty({count, w.in_features()}, w.values.options().dtype(at::kFloat));
  convert_weight_rows(view_of(w), first, first + count, out.data_ptr<float>());
  return out;
}

// GEMM over f32 blocks of features converted one at a time: never a whole f32 copy of the matrix. With 8-bit
// weights the activations are quantised as the streaming kernels quantise them, so both paths compute one function.
at::Tensor by_converted_blocks(const at::Tensor& x2d, const LinearWeight& w, const at::Tensor& bias) {
  const at::Tensor x = w.format() == WeightFormat::Q8 ? q8_activations(x2d.to(at::kFloat)) : x2d.to(at::kFloat);
  at::Tensor y = at::empty({x.size(0), w.out_features()}, x.options());
  for (std::int64_t first = 0; first < w.out_features(); first += kConvertedBlockFeatures) {
    const std::int64_t count = std::min(kConvertedBlockFeatures, w.out_features() - first);
    y.narrow(1, first, count).copy_(at::linear(x, converted_weight_rows(w, first, count),
                                               bias.defined() ? bias.narrow(0, first, count).to(at::kFloat) : bias));
  }
  return y.to(x2d.scalar_type());
}

}  // namespace

at::Tensor q8_activations(const at::Tensor& x) {
  const at::Tensor source = x.to(at::kFloat).contiguous();
  const std::int64_t rows = source.size(0), in = source.size(1);
  const QuantizedRows q = quantize_rows_q8(source.data_ptr<float>(), static_cast<int>(rows), in);
  const at::Tensor values = at::from_blob(const_cast<std::int8_t*>(q.values), {rows, in / kQ8Block, kQ8Block}, at::kChar);
  const at::Tensor scales = at::from_blob(const_cast<float*>(q.scales), {rows, in / kQ8Block, 1}, at::kFloat);
  return (values.to(at::kFloat) * scales).view({rows, in});
}

std::int64_t LinearWeight::bytes() const {
  return values.numel() * static_cast<std::int64_t>(values.element_size()) +
         (scales.defined() ? scales.numel() * static_cast<std::int64_t>(sizeof(float)) : 0);
}

WeightFormat LinearWeight::format() const {
  switch (values.scalar_type()) {
    case at::kHalf: return WeightFormat::F16;
    case at::kBFloat16: return WeightFormat::BF16;
    case at::kChar: return WeightFormat::Q8;
    default: return WeightFormat::F32;
  }
}

at::Tensor LinearWeight::to_float() const { return format() == WeightFormat::F32 ? values : converted_weight_rows(*this, 0, out_features()); }

LinearWeight make_linear_weight(const at::Tensor& w, WeightFormat format) {
  if (w.dim() != 2) throw Error("a linear weight must be a matrix [out, in]");
  const std::int64_t in = w.size(1);
  const bool representable = format == WeightFormat::Q8 ? in % kQ8Block == 0 && !w.is_cuda() : in % 8 == 0;
  if (format == WeightFormat::F32 || !representable) return {w, {}};
  if (format == WeightFormat::F16) return {w.to(at::kHalf).contiguous(), {}};
  if (format == WeightFormat::BF16) return {w.to(at::kBFloat16).contiguous(), {}};
  const at::Tensor source = w.to(at::kFloat).contiguous();
  at::Tensor q = at::empty({w.size(0), in}, source.options().dtype(at::kChar));
  at::Tensor scales = at::empty({w.size(0), in / kQ8Block}, source.options());
  at::parallel_for(0, w.size(0), 64, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t j = first; j < last; ++j)
      quantize_q8_row(source.data_ptr<float>() + j * in, in, q.data_ptr<std::int8_t>() + j * in,
                      scales.data_ptr<float>() + j * (in / kQ8Block));
  });
  return {q, scales};
}

void stream_product(const float* x, int rows, const LinearWeight& w, const float* bias, float* y) {
  const WeightView view = view_of(w);
  const std::int64_t blocks = feature_blocks(view);
  const int parts = team_parts(view.out * view.in * rows, at::get_num_threads());
  run_on_team(parts, [&](int part) { stream_blocks(x, rows, view, bias, y, blocks * part / parts, blocks * (part + 1) / parts); });
}

at::Tensor linear_streamed(const at::Tensor& x2d, const LinearWeight& w, const at::Tensor& bias) {
  const at::Tensor x = x2d.contiguous();
  const at::Tensor b = bias.defined() ? bias.to(at::kFloat).contiguous() : bias;
  const int rows = static_cast<int>(x.size(0));
  at::Tensor y = at::empty({rows, w.out_features()}, x.options());
  const WeightView view = view_of(w);
  const std::int64_t grain = std::max<std::int64_t>(1, kMinWorkPerThread / (kTileFeatures * view.in * rows));
  at::parallel_for(0, feature_blocks(view), grain, [&](std::int64_t first, std::int64_t last) {
    stream_blocks(x.data_ptr<float>(), rows, view, b.defined() ? b.data_ptr<float>() : nullptr, y.data_ptr<float>(), first, last);
  });
  return y;
}

at::Tensor linear(const at::Tensor& x, const LinearWeight& w, const at::Tensor& bias) {
  const std::int64_t in = w.in_features();
  if (x.size(-1) != in)
    throw Error("linear: input has " + std::to_string(x.size(-1)) + " features, the weight expects " + std::to_string(in));
  const std::int64_t rows = x.numel() / in;
  if (w.format() == WeightFormat::F32 && (x.is_cuda() || rows > kStreamRowsMax || x.scalar_type() != at::kFloat ||
                                        wants_gradient(x, w, bias)))
    return at::linear(x, w.values, bias);
  if (x.is_cuda()) {  // F16 / BF16 on the GPU: its own half-precision GEMM
    const at::Tensor y = at::linear(x.to(w.values.scalar_type()), w.values, bias.defined() ? bias.to(w.values.scalar_type()) : bias);
    return y.to(x.scalar_type());
  }
  auto shape = x.sizes().vec();
  shape.back() = w.out_features();
  const at::Tensor x2d = x.reshape({rows, in});
  if (rows > kStreamRowsMax || x.scalar_type() != at::kFloat) return by_converted_blocks(x2d, w, bias).view(shape);
  return linear_streamed(x2d, w, bias).view(shape);
}

}  // namespace speculum
