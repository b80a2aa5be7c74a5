// Sampling: CFG, temperature, top-k and top-p against hand-computed distributions; residuals; seeded
// draws that are deterministic and follow the distribution (chi-squared).
#include <cmath>

#include "sampling/counter_rng.h"
#include "sampling/distribution.h"
#include "test_helpers.h"

using namespace speculum;

namespace {

at::Tensor row(const std::vector<float>& v) { return at::tensor(v, at::kFloat).reshape({1, -1}); }

bool close(const at::Tensor& a, const std::vector<double>& expected, double tol = 1e-6) {
  const at::Tensor e = at::tensor(expected, at::kDouble).reshape(a.sizes());
  const double diff = (a.to(at::kDouble) - e).abs().max().item<double>();
  if (diff > tol) qWarning("max difference %g > %g", diff, tol);
  return diff <= tol;
}

std::vector<double> softmax(const std::vector<double>& logits) {
  double m = -1e300, sum = 0;
  for (double l : logits) m = std::max(m, l);
  std::vector<double> p;
  for (double l : logits) sum += std::exp(l - m);
  for (double l : logits) p.push_back(l == -INFINITY ? 0 : std::exp(l - m) / sum);
  return p;
}

}  // namespace

class TestSampling : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void cfg_combines_uncond_plus_scaled_difference() {
    const at::Tensor logits = at::tensor({1.0f, 2.0f, 3.0f, 0.5f, 0.5f, 0.5f}).reshape({2, 1, 3});
    // uncond + 3 * (cond - uncond) = 0.5 + 3 * (0.5, 1.5, 2.5)
    QVERIFY(close(cfg_combine(logits, 3.0f), {2.0, 5.0, 8.0}));
    QVERIFY(close(cfg_combine(logits.narrow(0, 0, 1), 3.0f), {1.0, 2.0, 3.0}));  // one row: no CFG
  }

  void temperature_scales_logits() {
    SamplingParams p;
    p.temperature = 0.5f;
    QVERIFY(close(processed_probabilities(row({1, 2, 3}), p), softmax({2, 4, 6})));
    p.temperature = 0;  // clamped to 1e-5: effectively greedy
    QVERIFY(close(processed_probabilities(row({1, 2, 3}), p), {0, 0, 1}));
  }

  void top_k_keeps_ties() {
    SamplingParams p;
    p.top_k = 2;
    QVERIFY(close(processed_probabilities(row({1, 3, 2, 0}), p), softmax({-INFINITY, 3, 2, -INFINITY})));
    // LlamaGen keeps every logit >= the k-th value, so a tie at the boundary keeps three.
    QVERIFY(close(processed_probabilities(row({3, 2, 2, 0}), p), softmax({3, 2, 2, -INFINITY})));
    p.top_k = 100;  // larger than the vocabulary: no effect
    QVERIFY(close(processed_probabilities(row({1, 2}), p), softmax({1, 2})));
  }

  void top_p_keeps_the_crossing_token() {
    // Probabilities 0.5, 0.3, 0.15, 0.05 (as logs).
    const std::vector<float> logits = {std::log(0.15f), std::log(0.5f), std::log(0.05f), std::log(0.3f)};
    SamplingParams p;
    p.top_p = 0.7f;  // cumulative 0.5 (keep), 0.8 crosses 0.7 (keep), then drop
    QVERIFY(close(processed_probabilities(row(logits), p), {0, 0.5 / 0.8, 0, 0.3 / 0.8}, 1e-5));
    p.top_p = 0.2f;  // the most likely token is always kept
    QVERIFY(close(processed_probabilities(row(logits), p), {0, 1, 0, 0}, 1e-6));
    p.top_p = 0.85f;
    QVERIFY(close(processed_probabilities(row(logits), p), {0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95}, 1e-5));
  }

  void top_k_then_top_p_in_llamagen_order() {
    SamplingParams p;
    p.top_k = 3;
    p.top_p = 0.6f;
    p.cfg_scale = 2.0f;
    // cond (2, 1, 0, 3), uncond (1, 1, 1, 1) -> guided (3, 1, -1, 5); top-3 drops -1; softmax(3,1,5)
    // = (0.117, 0.016, 0.867); 0.867 > 0.6 keeps only the top token.
    const at::Tensor logits = at::tensor({2.f, 1.f, 0.f, 3.f, 1.f, 1.f, 1.f, 1.f}).reshape({2, 1, 4});
    QVERIFY(close(target_distribution(logits, p), {0, 0, 0, 1}));
  }

  void residual_distribution_matches_hand_computation() {
    const at::Tensor p = at::tensor({0.5f, 0.3f, 0.2f}).reshape({1, 3});
    const at::Tensor q = at::tensor({0.2f, 0.6f, 0.2f}).reshape({1, 3});
    QVERIFY(close(residual_distribution(p, q), {1, 0, 0}));
    const at::Tensor q2 = at::tensor({0.1f, 0.1f, 0.8f}).reshape({1, 3});  // max(0, p - q) = (.4, .2, 0)
    QVERIFY(close(residual_distribution(p, q2), {2.0 / 3, 1.0 / 3, 0}, 1e-6));
    QVERIFY(close(residual_distribution(p, p), {0.5, 0.3, 0.2}));  // no residual mass: fall back to p
  }

  void counter_rng_is_deterministic_and_uniform() {
    QCOMPARE(counter_uniform(1, RngStream::Sample, 3, 4), counter_uniform(1, RngStream::Sample, 3, 4));
    QVERIFY(counter_uniform(1, RngStream::Sample, 3, 4) != counter_uniform(2, RngStream::Sample, 3, 4));
    QVERIFY(counter_uniform(1, RngStream::Sample, 3, 4) != counter_uniform(1, RngStream::Accept, 3, 4));
    QVERIFY(counter_uniform(1, RngStream::Sample, 3, 4) != counter_uniform(1, RngStream::Sample, 4, 3));
    double sum = 0;
    const int n = 100000;
    for (int i = 0; i < n; ++i) {
      const double u = counter_uniform(9, RngStream::Sample, i, 0);
      QVERIFY(u >= 0 && u < 1);
      sum += u;
    }
    QVERIFY(std::abs(sum / n - 0.5) < 0.005);  // 5.5 standard errors
  }

  void draws_follow_the_distribution() {
    const std::vector<float> probs = {0.05f, 0.4f, 0.0f, 0.25f, 0.3f};
    const at::Tensor p = at::tensor(probs);
    QCOMPARE(draw_token(p, 0.0), 0);
    QCOMPARE(draw_token(p, 0.0501), 1);
    QCOMPARE(draw_token(p, 0.4499), 1);
    QCOMPARE(draw_token(p, 0.4501), 3);     // zero-probability token 2 is never drawn
    QCOMPARE(draw_token(p, 0.9999999), 4);
    EXPECT_ERROR(draw_token(at::zeros({3}), 0.5), "no mass");

    const int n = 40000;
    std::vector<int> counts(probs.size(), 0);
    for (int i = 0; i < n; ++i) ++counts[draw_token(p, counter_uniform(5, RngStream::Sample, i, 0))];
    QCOMPARE(counts[2], 0);
    double chi2 = 0;
    for (std::size_t k = 0; k < probs.size(); ++k)
      if (probs[k] > 0) chi2 += std::pow(counts[k] - n * probs[k], 2) / (n * probs[k]);
    QVERIFY2(chi2 < 16.27, qPrintable(QString("chi2 = %1 (3 dof, p = 0.001 critical value 16.27)").arg(chi2)));
  }

  void params_validate_with_named_fields() {
    SamplingParams p;
    p.top_k = -1;
    EXPECT_ERROR(p.validate(), "top-k must be >= 0");
    p = {};
    p.temperature = NAN;
    EXPECT_ERROR(p.validate(), "temperature must be in [0, 100]");
    p = {};
    p.cfg_scale = -1;
    EXPECT_ERROR(p.validate(), "cfg must be in [0, 100]");
    QCOMPARE(SamplingParams{}.to_string(), std::string("cfg=4 temperature=1 top_k=0 top_p=1"));
  }
};

QTEST_GUILESS_MAIN(TestSampling)
#include "test_sampling.moc"
