// The decode step's matrix product (models/linear.h): every format and shape against LibTorch's own product in
// float64, the portable loops against the AVX2 kernels, weight conversion for many-row products, results independent of the thread count, the 8-bit
// quantisation's error bound, training's gradients, and a whole model in each format against float32.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include "decoding/decode_session.h"
#include "models/linear.h"
#include "models/random_weights.h"
#include "models/transformer.h"
#include "small_gpt_config.h"
#include "test_helpers.h"

using namespace speculum;

namespace {

// The weights as the format holds them, converted by LibTorch (8-bit: each weight times its block's scale).
at::Tensor held_weights(const LinearWeight& w) {
  const at::Tensor values = w.values.to(at::kDouble);
  if (w.format() != WeightFormat::Q8) return values;
  return values * w.scales.to(at::kDouble).repeat_interleave(kQ8Block, 1);
}

// The reference: the held weights (and for 8-bit weights the activations as quantised), multiplied in float64.
at::Tensor reference(const at::Tensor& x, const LinearWeight& w, const at::Tensor& bias) {
  const at::Tensor input = w.format() == WeightFormat::Q8 ? q8_activations(x) : x;
  const at::Tensor y = at::linear(input.to(at::kDouble), held_weights(w), bias.defined() ? bias.to(at::kDouble) : bias);
  return y.to(at::kFloat);
}

double max_error(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace

class TestLinear : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void every_format_matches_a_float64_product() {
    c10::InferenceMode inference;
    at::manual_seed(1);
    // Odd sizes reach the kernels' tails (features not a multiple of 4, an f32 row not a multiple of 8), odd rows the
    // single-row tile, 3 rows and more the three-row f32 tile; 40 and 70 rows pass kStreamRowsMax (GEMM,
    // over converted blocks but for f32).
    for (const auto& [out, in] : {std::pair<int, int>{37, 13}, {61, 64}, {300, 96}})
      for (const int rows : {1, 2, 3, 5, 9, 16, 17, 40, 70})
        for (const WeightFormat format : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16, WeightFormat::Q8}) {
          const at::Tensor w = at::randn({out, in}) * 0.1, x = at::randn({rows, in}), bias = at::randn({out});
          const LinearWeight lw = make_linear_weight(w, format);
          const bool representable = format == WeightFormat::Q8 ? in % kQ8Block == 0 : in % 8 == 0;
          QCOMPARE(lw.format(), representable ? format : WeightFormat::F32);
          const at::Tensor y = linear(x, lw, bias);
          QCOMPARE(y.sizes().vec(), (std::vector<std::int64_t>{rows, out}));
          const double error = max_error(y, reference(x, lw, bias));
          if (error > 1e-4)
            QFAIL(qPrintable(QString("%1 x %2, %3 rows, %4: error %5").arg(out).arg(in).arg(rows)
                                 .arg(QString::fromStdString(weight_format_name(format))).arg(error)));
        }
  }

  void leading_dimensions_are_kept() {
    c10::InferenceMode inference;
    const LinearWeight w = make_linear_weight(at::randn({24, 16}), WeightFormat::F16);
    const at::Tensor x = at::randn({2, 3, 16});
    const at::Tensor y = linear(x, w);
    QCOMPARE(y.sizes().vec(), (std::vector<std::int64_t>{2, 3, 24}));
    QVERIFY(max_error(y[1][2], linear(x[1][2].unsqueeze(0), w)[0]) == 0.0);  // row by row the same sums
  }

  void portable_loop_agrees_with_the_vector_kernels() {
    if (!stream_linear_vectorised()) QSKIP("this CPU runs the portable loop only");
    at::manual_seed(2);
    for (const WeightFormat format : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16, WeightFormat::Q8}) {
      const LinearWeight lw = make_linear_weight(at::randn({45, 96}), format);
      const at::Tensor x = at::randn({3, 96}), bias = at::randn({45});
      const WeightView view{lw.format(), lw.values.data_ptr(), lw.scales.defined() ? lw.scales.data_ptr<float>() : nullptr, 45, 96};
      at::Tensor vector = at::empty({3, 45}), portable = at::empty({3, 45});
      stream_linear(x.data_ptr<float>(), 3, view, bias.data_ptr<float>(), vector.data_ptr<float>(), 0, 45);
      const QuantizedRows xq = quantize_rows_q8(x.data_ptr<float>(), 3, 96);
      stream_linear_portable(x.data_ptr<float>(), xq, 3, view, bias.data_ptr<float>(), portable.data_ptr<float>(), 0, 45);
      QVERIFY2(max_error(vector, portable) < 1e-4, weight_format_name(format).c_str());
    }
  }

  void weight_rows_convert_exactly() {
    at::manual_seed(6);
    for (const WeightFormat format : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16, WeightFormat::Q8}) {
      const LinearWeight lw = make_linear_weight(at::randn({20, 64}), format);
      const WeightView view{lw.format(), lw.values.data_ptr(), lw.scales.defined() ? lw.scales.data_ptr<float>() : nullptr, 20, 64};
      at::Tensor converted = at::empty({7, 64}), portable = at::empty({7, 64});
      convert_weight_rows(view, 5, 12, converted.data_ptr<float>());
      convert_weight_rows_portable(view, 5, 12, portable.data_ptr<float>());
      const at::Tensor expected = held_weights(lw).narrow(0, 5, 7).to(at::kFloat);
      QVERIFY2(at::equal(converted, expected), weight_format_name(format).c_str());  // a conversion, no rounding
      QVERIFY2(at::equal(portable, expected), weight_format_name(format).c_str());
    }
  }

  void results_do_not_depend_on_the_thread_count() {
    c10::InferenceMode inference;
    at::manual_seed(3);
    const int threads = at::get_num_threads();
    for (const WeightFormat format : {WeightFormat::F32, WeightFormat::Q8}) {
      const LinearWeight lw = make_linear_weight(at::randn({1024, 256}), format);
      const at::Tensor x = at::randn({4, 256});
      at::set_num_threads(1);
      const at::Tensor one = linear(x, lw);
      at::set_num_threads(2);
      const at::Tensor two = linear(x, lw);
      at::set_num_threads(threads);
      QVERIFY(at::equal(one, two));  // bit for bit
    }
  }

  void q8_error_stays_within_half_a_step() {
    at::manual_seed(4);
    const at::Tensor w = at::randn({8, 64}) * at::linspace(0.01, 3.0, 8).unsqueeze(1);  // rows of very different scale
    const LinearWeight q = make_linear_weight(w, WeightFormat::Q8);
    QCOMPARE(q.values.scalar_type(), at::kChar);
    QCOMPARE(q.scales.sizes().vec(), (std::vector<std::int64_t>{8, 64 / kQ8Block}));
    const at::Tensor step = q.scales.repeat_interleave(kQ8Block, 1);
    QVERIFY(((q.to_float() - w).abs() <= step * 0.5 + 1e-7).all().item<bool>());
    QVERIFY((q.values.abs().amax(1) == 127).all().item<bool>());  // each block's largest weight uses the full range
    const at::Tensor zero_row = make_linear_weight(at::zeros({1, 32}), WeightFormat::Q8).to_float();
    QVERIFY(at::equal(zero_row, at::zeros({1, 32})));  // an all-zero block gets scale 0, not NaN
  }

  void training_keeps_gradients() {
    const at::Tensor w = (at::randn({6, 16}) * 0.1).requires_grad_();
    const at::Tensor x = at::randn({2, 16}).requires_grad_();
    const LinearWeight lw = make_linear_weight(w, WeightFormat::F32);
    QVERIFY(lw.values.is_same(w));  // f32 shares the trained tensor
    linear(x, lw).sum().backward();
    QVERIFY(w.grad().defined() && x.grad().defined());
    QVERIFY(max_error(w.grad(), x.sum(0).unsqueeze(0).expand({6, 16})) < 1e-6);
  }

  void a_model_in_each_format_stays_close_to_float32() {
    c10::InferenceMode inference;
    const GptConfig c = small_gpt_config();
    const TensorMap weights = random_weights(gpt_tensor_specs(c), 5);
    const auto logits = [&](WeightFormat format) {
      TensorMap copy;
      for (const auto& [name, t] : weights) copy[name] = t.clone();
      const Transformer m(c, std::move(copy), at::kCPU, format);
      KVCache cache = m.make_cache(2, 0);
      m.forward(DecodeSession::prefix_input(m, m.class_prefix(1, 2)), cache);
      ForwardInput in;
      in.tokens = at::arange(5, at::kLong);
      for (int i = 0; i < 5; ++i) in.positions.push_back(c.cls_token_num + i);
      return std::pair{m.forward(in, cache).logits, m.decode_step_weight_bytes()};
    };
    const auto [f32, f32_bytes] = logits(WeightFormat::F32);
    for (const auto& [format, tolerance, bytes_ratio] :
         {std::tuple{WeightFormat::F16, 5e-3, 0.5}, {WeightFormat::BF16, 5e-2, 0.5}, {WeightFormat::Q8, 5e-2, 1.125 / 4}}) {
      const auto [other, other_bytes] = logits(format);
      const double relative = max_error(other, f32) / f32.abs().max().item<double>();
      QVERIFY2(relative < tolerance, (weight_format_name(format) + ": " + std::to_string(relative)).c_str());
      QCOMPARE(static_cast<double>(other_bytes) / static_cast<double>(f32_bytes), bytes_ratio);
    }
  }
};

QTEST_GUILESS_MAIN(TestLinear)
#include "test_linear.moc"
