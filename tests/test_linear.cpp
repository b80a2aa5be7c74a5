// The decode step's matrix product (models/linear.h): every format and shape against LibTorch's own product in
// float64, the portable loops against each instruction set's kernels, the cap on them, weight conversion for many-row products, results independent of the thread count, the 8-bit
// quantisation's error bound, training's gradients, and a whole model in each format against float32; attention's
// softmax and weighted sums (over f32 and f16 cached values), the feed-forward gate and the rounding of cached keys
// and values to f16.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "decoding/decode_session.h"
#include "models/linear.h"
#include "models/random_weights.h"
#include "models/step_team.h"
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

  // Every instruction set this CPU has against the portable loop, on shapes that take each tile (7 rows: 4 + 3,
  // 4 + 2 + 1), a feature count not a multiple of 4, rows shorter than a vector's multiple (104 = 6.5 × 16, 45 for
  // f32) and an odd number of q8 blocks (96 = 3 × 32).
  void every_kernel_level_agrees_with_the_portable_loop() {
    const std::vector<KernelLevel> levels = supported_kernel_levels();
    QCOMPARE(levels.front(), KernelLevel::Portable);
    QVERIFY(std::find(levels.begin(), levels.end(), kernel_level()) != levels.end());
    if (levels.size() == 1) QSKIP("this CPU runs the portable loop only");
    at::manual_seed(2);
    for (const std::int64_t in : {96, 104, 45})
      for (const WeightFormat format : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16, WeightFormat::Q8}) {
        const LinearWeight lw = make_linear_weight(at::randn({45, in}), format);
        const WeightView view{lw.format(), lw.values.data_ptr(), lw.scales.defined() ? lw.scales.data_ptr<float>() : nullptr, 45, in};
        const at::Tensor x = at::randn({7, in}), bias = at::randn({45});
        const QuantizedRows xq = quantize_rows_q8(x.data_ptr<float>(), 7, in);
        at::Tensor portable = at::empty({7, 45});
        stream_linear_at(KernelLevel::Portable, x.data_ptr<float>(), xq, 7, view, bias.data_ptr<float>(), portable.data_ptr<float>(), 0, 45);
        at::Tensor converted_portable = at::empty({45, in});
        convert_weight_rows_at(KernelLevel::Portable, view, 0, 45, converted_portable.data_ptr<float>());
        for (const KernelLevel level : levels) {
          const std::string what = std::string(kernel_level_name(level)) + " " + weight_format_name(lw.format()) + " in " + std::to_string(in);
          at::Tensor vector = at::empty({7, 45});
          stream_linear_at(level, x.data_ptr<float>(), xq, 7, view, bias.data_ptr<float>(), vector.data_ptr<float>(), 0, 45);
          QVERIFY2(max_error(vector, portable) < 1e-4, what.c_str());
          at::Tensor converted = at::empty({45, in});
          convert_weight_rows_at(level, view, 0, 45, converted.data_ptr<float>());
          QVERIFY2(at::equal(converted, converted_portable), what.c_str());  // a conversion, no rounding
        }
      }
  }

  void attention_weights_match_a_float64_softmax_at_every_level() {
    at::manual_seed(4);
    for (const std::int64_t count : {1, 7, 16, 45, 272}) {
      const at::Tensor scores = at::randn({count}) * 30, bias = at::randn({count});
      bias.narrow(0, 0, count / 3).fill_(-INFINITY);  // masked slots (a caption's padding), never the whole row
      const float scale = 0.144f;
      const at::Tensor expected = at::softmax(scores.to(at::kDouble) * scale + bias.to(at::kDouble), 0);
      for (const KernelLevel level : supported_kernel_levels()) {
        const std::string what = std::string(kernel_level_name(level)) + ", " + std::to_string(count) + " scores";
        at::Tensor weights = scores.clone();
        softmax_scores_at(level, weights.data_ptr<float>(), bias.data_ptr<float>(), scale, count);
        const at::Tensor relative = (weights.to(at::kDouble) - expected).abs() / expected.clamp_min(1e-30);
        // Scaled scores up to ±15 carry float's rounding (~1e-6 of e^x) into every level, std::exp's included.
        QVERIFY2((relative.masked_select(expected > 1e-30).max().item<double>() < 4e-6), what.c_str());
        QVERIFY2(at::equal(weights.narrow(0, 0, count / 3), at::zeros({count / 3})), what.c_str());  // e^-∞ is 0
      }
    }
    float far[3] = {0.0f, -100.0f, -87.5f};  // below e^-87 there is no normal float: exactly 0, as e^-∞
    const float zero_bias[3] = {};
    for (const KernelLevel level : supported_kernel_levels()) {
      float w[3] = {far[0], far[1], far[2]};
      softmax_scores_at(level, w, zero_bias, 1.0f, 3);
      QCOMPARE(w[0], 1.0f);
      QVERIFY(w[1] < 1e-37f && w[2] < 1e-37f);
    }
  }

  // One query's probabilities times the cached values, over f32 and f16 caches (rows of a head's width, and widths
  // that end on a partial vector), against float64 over the values as stored.
  void attention_values_match_float64_at_every_level() {
    at::manual_seed(6);
    for (const std::int64_t hd : {48, 64, 20, 72})
      for (const std::int64_t count : {1, 9, 150})
        for (const WeightFormat format : {WeightFormat::F32, WeightFormat::F16}) {
          const at::Tensor weights = at::softmax(at::randn({count}) * 4, 0);
          const at::Tensor rows = at::randn({count, hd}).to(format == WeightFormat::F16 ? at::kHalf : at::kFloat);
          const at::Tensor expected = at::matmul(weights.to(at::kDouble), rows.to(at::kDouble));
          for (const KernelLevel level : supported_kernel_levels()) {
            at::Tensor out = at::empty({hd});
            weighted_row_sum_at(level, weights.data_ptr<float>(), WeightView{format, rows.data_ptr(), nullptr, count, hd}, out.data_ptr<float>());
            const std::string what = std::string(kernel_level_name(level)) + " " + weight_format_name(format) + ", " +
                                     std::to_string(count) + " rows of " + std::to_string(hd);
            QVERIFY2(max_error(out.to(at::kDouble), expected) < 1e-6, what.c_str());
          }
        }
    const at::Tensor q8 = at::zeros({2, 32}, at::kChar);
    float out[32];
    const float weights[2] = {0.5f, 0.5f};
    QVERIFY_THROWS_EXCEPTION(Error, weighted_row_sum(weights, WeightView{WeightFormat::Q8, q8.data_ptr(), nullptr, 2, 32}, out));
  }

  // A cache slot written by the decode step holds what LibTorch's conversion writes: ties to even, subnormals, ±∞,
  // overflow to ∞; the values in place become the rounded ones.
  void floats_round_to_half_as_libtorch_rounds_them() {
    at::manual_seed(7);
    const at::Tensor x = at::cat({at::randn({997}) * 3, at::randn({64}) * 1e-6, at::randn({8}) * 1e5,
                                  at::tensor({1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65520.0f, 65519.0f, INFINITY, -INFINITY, 0.0f, -0.0f})});
    const at::Tensor expected = x.to(at::kHalf);
    for (const KernelLevel level : supported_kernel_levels()) {
      at::Tensor values = x.clone(), bits = at::empty({x.numel()}, at::kHalf);
      round_to_f16_at(level, values.data_ptr<float>(), x.numel(), static_cast<std::uint16_t*>(bits.data_ptr()));
      QVERIFY2(at::equal(bits.view(at::kShort), expected.view(at::kShort)), kernel_level_name(level));
      QVERIFY2(at::equal(values, expected.to(at::kFloat)), kernel_level_name(level));
    }
  }

  void the_feed_forward_gate_matches_float64_at_every_level() {
    at::manual_seed(5);
    for (const std::int64_t count : {1, 13, 64, 517}) {
      const at::Tensor gate = at::randn({count}) * 12, up = at::randn({count});
      gate[0] = -200.0f;  // e^200 overflows float: silu(-200) is -0, not NaN
      const at::Tensor g = gate.to(at::kDouble);
      const at::Tensor expected = g * at::sigmoid(g) * up.to(at::kDouble);
      for (const KernelLevel level : supported_kernel_levels()) {
        at::Tensor out = gate.clone();
        silu_gate_at(level, out.data_ptr<float>(), up.data_ptr<float>(), count);
        const std::string what = std::string(kernel_level_name(level)) + ", " + std::to_string(count) + " values";
        QVERIFY2(((out.to(at::kDouble) - expected).abs() <= 1e-6 * expected.abs() + 1e-30).all().item<bool>(), what.c_str());
      }
    }
  }

  void weight_rows_convert_exactly() {
    at::manual_seed(6);
    for (const WeightFormat format : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16, WeightFormat::Q8}) {
      const LinearWeight lw = make_linear_weight(at::randn({20, 64}), format);
      const WeightView view{lw.format(), lw.values.data_ptr(), lw.scales.defined() ? lw.scales.data_ptr<float>() : nullptr, 20, 64};
      at::Tensor converted = at::empty({7, 64});
      convert_weight_rows(view, 5, 12, converted.data_ptr<float>());
      const at::Tensor expected = held_weights(lw).narrow(0, 5, 7).to(at::kFloat);
      QVERIFY2(at::equal(converted, expected), weight_format_name(format).c_str());  // a conversion, no rounding
    }
  }

  void the_kernel_cap_is_checked() {
    const KernelLevel best = supported_kernel_levels().back();
    QCOMPARE(capped_kernel_level(""), best);
    QCOMPARE(capped_kernel_level("portable"), KernelLevel::Portable);
    QCOMPARE(capped_kernel_level("avx512"), best);  // a cap above the CPU's best is the best
    QCOMPARE(capped_kernel_level("avx2"), std::min(KernelLevel::Avx2, best));
    std::string message;
    QVERIFY(test::throws_error_containing([] { (void)capped_kernel_level("avx9"); }, "SPECULUM_KERNELS=avx9", &message));
    QVERIFY2(message.find("portable, avx2, avx512") != std::string::npos, message.c_str());
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

  void the_step_team_runs_every_part_once() {
    for (const int parts : {1, 2, 3, 5}) {
      std::vector<std::atomic<int>> runs(static_cast<std::size_t>(parts));
      for (int round = 0; round < 200; ++round) run_on_team(parts, [&](int part) { runs[static_cast<std::size_t>(part)]++; });
      for (const auto& r : runs) QCOMPARE(r.load(), 200);
    }
    // Two callers at once: one gets the helpers, the other runs its parts itself; both finish with every part done.
    std::atomic<int> total{0};
    std::thread other([&] {
      for (int round = 0; round < 500; ++round) run_on_team(2, [&](int) { total++; });
    });
    for (int round = 0; round < 500; ++round) run_on_team(2, [&](int) { total++; });
    other.join();
    QCOMPARE(total.load(), 2000);
    // A part that throws on the calling thread: rethrown after the helpers are done.
    std::atomic<int> finished{0};
    QVERIFY(test::throws_error_containing(
        [&] {
          run_on_team(2, [&](int part) {
            if (part == 0) throw Error("part 0 failed");
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            finished++;
          });
        },
        "part 0 failed"));
    QCOMPARE(finished.load(), 1);
    // A forked child has none of its parent's helpers: it runs every part itself instead of waiting for them.
    run_on_team(2, [](int) {});  // the parent's helper exists
    const pid_t child = fork();
    if (child == 0) {
      alarm(20);  // a hang fails the check below rather than the whole test run
      std::atomic<int> ran{0};
      run_on_team(2, [&](int) { ran++; });
      _exit(ran.load() == 2 ? 0 : 1);
    }
    int status = 0;
    QCOMPARE(waitpid(child, &status, 0), child);
    QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forked child did not run both parts itself");
    QCOMPARE(team_parts(kMinTeamWork * 10, 2), 2);
    QCOMPARE(team_parts(kMinTeamWork / 2, 8), 1);
    QCOMPARE(team_parts(kMinTeamWork * 3, 8), 3);
  }

  void a_step_split_across_the_team_is_bit_for_bit_one_thread() {
    c10::InferenceMode inference;
    at::manual_seed(7);
    const int threads = at::get_num_threads();
    for (const WeightFormat format : {WeightFormat::F32, WeightFormat::F16, WeightFormat::Q8}) {
      const LinearWeight lw = make_linear_weight(at::randn({576, 192}), format);
      const at::Tensor x = at::randn({2, 192}), bias = at::randn({576});
      at::Tensor one = at::empty({2, 576}), two = at::empty({2, 576});
      at::set_num_threads(1);
      stream_product(x.data_ptr<float>(), 2, lw, bias.data_ptr<float>(), one.data_ptr<float>());
      at::set_num_threads(2);
      QVERIFY(team_parts(576 * 192 * 2, at::get_num_threads()) == 2);  // the split this checks
      stream_product(x.data_ptr<float>(), 2, lw, bias.data_ptr<float>(), two.data_ptr<float>());
      at::set_num_threads(threads);
      QVERIFY2(at::equal(one, two), weight_format_name(format).c_str());
      QVERIFY(max_error(one, reference(x, lw, bias)) < 1e-3);
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
