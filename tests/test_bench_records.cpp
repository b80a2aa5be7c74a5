// bench's records and tables on hand-made data: per-position acceptance from Verify events, quartiles,
// τ / NFE / acceptance from counts, speed-ups paired per image with ar's, JSON round trip, shard merging
// and the errors for results that do not belong together; the machine line's BLAS kernels.
#include <dlfcn.h>
#include <nlohmann/json.hpp>

#include "speculum.h"
#include "test_helpers.h"
#include "trace/bench_records.h"
#include "trace/frechet_distance.h"

#include <cmath>
#include <random>

using namespace speculum;

namespace {

BenchImage image(const std::string& method, int prompt, std::uint64_t seed, int nfe, double wall_ms, long drafted = 0, long accepted = 0) {
  BenchImage i;
  i.method = method;
  i.prompt_index = prompt;
  i.seed = seed;
  i.tokens = 64;
  i.nfe = nfe;
  i.drafted = drafted;
  i.accepted = accepted;
  i.wall_ms = wall_ms;
  i.forward_ms = wall_ms / 2;
  i.draft_ms = wall_ms / 4;
  return i;
}

BenchRun two_prompt_run() {
  BenchRun run;
  run.bundle = "b";
  run.machine = "m";
  run.threads = 1;
  run.methods = {"ar", "sjd"};
  run.prompts = {"a red circle", "a blue square"};
  run.seeds = 1;
  run.images = {image("ar", 0, 0, 64, 100), image("sjd", 0, 0, 32, 50, 40, 32), image("ar", 1, 0, 64, 120),
                image("sjd", 1, 0, 16, 30, 60, 48)};
  return run;
}

}  // namespace

class TestBenchRecords : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void frechet_distance_matches_hand_computed_cases() {
    // 1-D: {0, 2} (mean 1, variance 2) and {1, 3, 5} (mean 3, variance 4): (1-3)^2 + 2 + 4 - 2 sqrt(8).
    QVERIFY(std::abs(*frechet_distance(FeatureVectors{{0}, {2}}, FeatureVectors{{1}, {3}, {5}}) - (10 - 2 * std::sqrt(8.0))) < 1e-12);
    // 2-D with correlations: for 2x2 covariances tr((S1^1/2 S2 S1^1/2)^1/2) = sqrt(tr(S1 S2) + 2 sqrt(det S1 det S2)).
    const FeatureVectors a = {{0, 0}, {2, 0}, {0, 2}}, b = {{1, 0}, {0, 3}, {1, 1}, {4, 2}};
    const FeatureMoments ma = feature_moments(a), mb = feature_moments(b);
    const std::vector<double> hand = {4.0 / 3, -2.0 / 3, -2.0 / 3, 4.0 / 3};
    for (int i = 0; i < 4; ++i) QVERIFY(std::abs(ma.covariance[i] - hand[i]) < 1e-12);
    const auto& s1 = ma.covariance;
    const auto& s2 = mb.covariance;
    const double tr_product = s1[0] * s2[0] + s1[1] * s2[2] + s1[2] * s2[1] + s1[3] * s2[3];
    const double dets = (s1[0] * s1[3] - s1[1] * s1[2]) * (s2[0] * s2[3] - s2[1] * s2[2]);
    const double mean_term = std::pow(ma.mean[0] - mb.mean[0], 2) + std::pow(ma.mean[1] - mb.mean[1], 2);
    const double expected = mean_term + s1[0] + s1[3] + s2[0] + s2[3] - 2 * std::sqrt(tr_product + 2 * std::sqrt(dets));
    QVERIFY2(std::abs(frechet_distance(ma, mb) - expected) < 1e-10, qPrintable(QString::number(frechet_distance(ma, mb) - expected)));
    // 32-D, as bench uses it: identical sets give 0; a shift of every vector by c adds |c|^2; a rotation changes nothing.
    std::mt19937 gen(3);
    std::normal_distribution<float> normal;
    FeatureVectors x(100, std::vector<float>(32)), y(80, std::vector<float>(32));
    for (auto& r : x)
      for (auto& v : r) v = normal(gen);
    for (auto& r : y)
      for (std::size_t i = 0; i < r.size(); ++i) r[i] = normal(gen) * (1 + 0.05f * static_cast<float>(i));
    QVERIFY(*frechet_distance(x, x) < 1e-9);
    const double base = *frechet_distance(x, y);
    FeatureVectors shifted = y;
    for (auto& r : shifted) r[3] += 2, r[7] -= 1;
    QVERIFY(std::abs(*frechet_distance(x, shifted) - (base + 5 + 2 * 2 * (feature_moments(y).mean[3] - feature_moments(x).mean[3]) -
                                                      2 * (feature_moments(y).mean[7] - feature_moments(x).mean[7]))) < 1e-6);
    const double c = std::cos(0.7), s = std::sin(0.7);
    const auto rotate = [&](FeatureVectors rows) {  // a rotation in the plane of coordinates 0 and 1
      for (auto& r : rows) {
        const double r0 = r[0], r1 = r[1];
        r[0] = static_cast<float>(c * r0 - s * r1), r[1] = static_cast<float>(s * r0 + c * r1);
      }
      return rows;
    };
    QVERIFY(std::abs(*frechet_distance(rotate(x), rotate(y)) - base) < 1e-4);
    // Eigen-decomposition of a symmetric matrix with known spectrum.
    std::vector<double> eig = symmetric_eigenvalues({2, 1, 0, 1, 2, 0, 0, 0, 5}, 3);
    std::sort(eig.begin(), eig.end());
    QVERIFY(std::abs(eig[0] - 1) < 1e-12 && std::abs(eig[1] - 3) < 1e-12 && std::abs(eig[2] - 5) < 1e-12);
    QVERIFY(!frechet_distance(FeatureVectors{{1, 2}}, y).has_value());
    EXPECT_ERROR(feature_moments(FeatureVectors{{1, 2}, {3}}), "feature vectors of different lengths (2 and 1)");
  }

  void verify_events_count_per_draft_position() {
    BenchImage i;
    Verify v;
    v.decisions = {Decision::StrictAccept, Decision::SoftAccept, Decision::Reject};
    count_verify(v, i);
    v.decisions = {Decision::Reject};
    count_verify(v, i);
    QCOMPARE(i.drafted, 4L);
    QCOMPARE(i.accepted, 2L);
    QCOMPARE(i.drafted_at, (std::vector<long>{2, 1, 1}));
    QCOMPARE(i.accepted_at, (std::vector<long>{1, 1, 0}));
  }

  void quartiles_interpolate() {
    const Spread s = spread_of({4, 1, 3, 2});  // sorted 1 2 3 4: positions 0.75, 1.5, 2.25
    QCOMPARE(s.q1, 1.75);
    QCOMPARE(s.median, 2.5);
    QCOMPARE(s.q3, 3.25);
    QCOMPARE(spread_of({7}).median, 7.0);
  }

  void rows_come_from_counts_and_paired_images() {
    const auto rows = summarize(two_prompt_run());
    QCOMPARE(rows.size(), std::size_t{2});
    const BenchRow& sjd = rows[1];
    QCOMPARE(sjd.images, 2);
    QCOMPARE(sjd.nfe, 48L);
    QCOMPARE(sjd.tau(), 128.0 / 48.0);          // tokens over forwards, not a mean of ratios
    QCOMPARE(sjd.acceptance(), 80.0 / 100.0);    // accepted over drafted
    QCOMPARE(sjd.speedup.q1, 2.0 + 0.25 * 2.0);  // per-image speed-ups 100/50 = 2 and 120/30 = 4
    QCOMPARE(sjd.speedup.median, 3.0);
    QCOMPARE(rows[0].speedup.median, 1.0);
    QCOMPARE(sjd.outside_forward_share(), 0.5);
    QCOMPARE(sjd.draft_share(), 0.25);
    const std::string csv = bench_csv(rows);
    QVERIFY(csv.find("sjd,2,128,48,100,80,24.00,2.6667,0.8000") != std::string::npos);
    QVERIFY(bench_markdown(two_prompt_run(), rows).find("| `sjd` | 2 | 24.0 | 2.67 | 80.0 % (80 / 100) |") != std::string::npos);
  }

  // Checker verdicts pair with ar's on the same prompt and seed; an image ar's checker skipped is not paired.
  void verdicts_pair_with_ar() {
    BenchRun run = two_prompt_run();
    run.prompts.push_back("a green star");
    run.images.push_back(image("ar", 2, 0, 64, 100));
    run.images.push_back(image("sjd", 2, 0, 32, 50));
    const std::vector<std::pair<int, int>> verdicts = {{1, 1}, {1, 0}, {0, 0}, {1, 1}, {1, 1}, {1, 0}};  // (checked, passed)
    for (std::size_t k = 0; k < verdicts.size(); ++k) std::tie(run.images[k].checked, run.images[k].passed) = verdicts[k];
    const BenchRow sjd = summarize(run)[1];
    QCOMPARE(sjd.checked, 3);
    QCOMPARE(sjd.passed, 1);
    QCOMPARE(sjd.vs_ar.n, 2);  // prompt 1's ar image was not checked
    QCOMPARE(sjd.vs_ar.reference_only, 2);
    QCOMPARE(sjd.vs_ar.difference(), -1.0);
    QVERIFY(bench_markdown(run, summarize(run)).find("| 33.3 % (1 / 3) | -100.0 [") != std::string::npos);
    PairedVerdicts p;  // hand-computed: 10 pairs, discordant 3 (ref only) + 1 (cand only): se = sqrt(4 - 4/10) / 10
    for (int k = 0; k < 10; ++k) p.add(k < 5, (k >= 3 && k < 5) || k == 9);
    QCOMPARE(p.difference(), -0.2);
    QVERIFY(std::abs(p.standard_error() - std::sqrt(3.6) / 10) < 1e-12);
  }

  void token_agreement_with_ar_is_counted_over_tokens() {
    BenchRun run = two_prompt_run();
    run.images[1].same_as_ar = 64;  // sjd on prompt 0: ar's image exactly
    run.images[3].same_as_ar = 32;  // sjd on prompt 1: half of it
    const BenchRow sjd = summarize(run)[1];
    QCOMPARE(sjd.same_as_ar, 96L);
    QVERIFY(bench_markdown(run, summarize(run)).find("| 80.0 % (80 / 100) | 75.0 % |") != std::string::npos);
  }

  void json_round_trip_and_errors() {
    const BenchRun run = two_prompt_run();
    const BenchRun back = bench_run_from_json(bench_run_to_json(run), "x.json");
    QCOMPARE(bench_csv(summarize(back)), bench_csv(summarize(run)));
    nlohmann::json doc = bench_run_to_json(run);
    doc["images"][1].erase("nfe");
    QVERIFY(test::throws_error_containing([&] { bench_run_from_json(doc, "x.json"); }, "x.json: images[1]: field 'nfe' is missing"));
    doc = bench_run_to_json(run);
    doc["images"][0]["method"] = "eagle";
    QVERIFY(test::throws_error_containing([&] { bench_run_from_json(doc, "x.json"); }, "names a prompt or method the run does not have"));
    QVERIFY(test::throws_error_containing([&] { bench_run_from_json(nlohmann::json::object(), "x.json"); }, "field 'format' is missing"));
    // Counts and times that no run could have written are refused where they are read, naming the image and field.
    const auto refused = [&](const std::function<void(nlohmann::json&)>& change, const std::string& fragment) {
      nlohmann::json bad = bench_run_to_json(run);
      change(bad["images"][1]);
      return test::throws_error_containing([&] { bench_run_from_json(bad, "x.json"); }, fragment);
    };
    QVERIFY(refused([](nlohmann::json& i) { i["accepted"] = i["drafted"].get<long>() + 1; }, "x.json: images[1]: fields 'drafted'"));
    QVERIFY(refused([](nlohmann::json& i) { i["drafted"] = -4; }, "must be counts with accepted <= drafted"));
    QVERIFY(refused([](nlohmann::json& i) { i["tokens"] = 0; }, "images[1]: field 'tokens' must be in [1, 16384]"));
    QVERIFY(refused([](nlohmann::json& i) { i["nfe"] = 0; }, "field 'nfe' must be at least 1"));
    QVERIFY(refused([](nlohmann::json& i) { i["wall_ms"] = -1.0; }, "field 'wall_ms' must be a time in ms (> 0)"));
    QVERIFY(refused([](nlohmann::json& i) { i["draft_ms"] = -0.5; }, "field 'draft_ms' must be a time in ms (>= 0)"));
    QVERIFY(refused([&](nlohmann::json& i) { i["seed"] = run.seeds; }, "is outside the run's seeds"));
    QVERIFY(refused([](nlohmann::json& i) { i["passed"] = 1; i["checked"] = 0; }, "passed only when checked"));
    QVERIFY(refused([](nlohmann::json& i) { i["same_as_ar"] = i["tokens"].get<int>() + 1; }, "'same_as_ar' must be a count"));
    QVERIFY(refused([](nlohmann::json& i) { i["accepted_at"] = nlohmann::json::array({1}); i["drafted_at"] = nlohmann::json::array({1, 2}); },
                    "differ in length"));
    nlohmann::json mixed = bench_run_to_json(run);
    mixed["images"][0]["features"] = std::vector<float>(4, 0.5f);
    mixed["images"][1]["features"] = std::vector<float>(3, 0.5f);
    QVERIFY(test::throws_error_containing([&] { bench_run_from_json(mixed, "x.json"); },
                                          "images[1]: field 'features' has 3 values, an earlier image's 4"));
  }

  // An interrupted run keeps the prompt x seed pairs every method finished; the half-measured pair is redone.
  void resuming_keeps_only_finished_pairs() {
    const BenchRun whole = two_prompt_run();
    BenchRun interrupted = whole;
    interrupted.images.pop_back();  // sjd on prompt 1 never ran
    const auto kept = finished_pairs(interrupted, whole, "run.json");
    QCOMPARE(kept.size(), std::size_t{2});
    QVERIFY(kept[0].prompt_index == 0 && kept[1].prompt_index == 0);
    BenchRun other = whole;
    other.seeds = 2;
    QVERIFY(test::throws_error_containing([&] { finished_pairs(interrupted, other, "run.json"); }, "'run.json' holds a different run"));
  }

  void shards_merge_into_the_unsharded_order() {
    const BenchRun whole = two_prompt_run();
    BenchRun a = whole, b = whole;
    a.shards = b.shards = 2;
    b.shard = 1;
    a.images = {whole.images[0], whole.images[1]};
    b.images = {whole.images[2], whole.images[3]};
    const BenchRun merged = merge_bench_runs({b, a});
    QCOMPARE(bench_run_to_json(merged).dump(), bench_run_to_json(whole).dump());
    QVERIFY(test::throws_error_containing([&] { merge_bench_runs({a}); }, "1 of 2 shards given"));
    QVERIFY(test::throws_error_containing([&] { merge_bench_runs({a, a}); }, "shard 0 is given twice"));
    BenchRun other = b;
    other.bundle = "c";
    QVERIFY(test::throws_error_containing([&] { merge_bench_runs({a, other}); }, "the parts come from different runs"));
    BenchRun short_b = b;
    short_b.images.pop_back();
    QVERIFY(test::throws_error_containing([&] { merge_bench_runs({a, short_b}); }, "3 images, a complete run has 4"));
  }

  void frechet_distances_come_from_the_stored_features() {
    BenchRun run = two_prompt_run();
    run.images[0].features = {0, 1}, run.images[2].features = {2, 0};    // ar
    run.images[1].features = {0, 1}, run.images[3].features = {2, 0.5};  // sjd
    run.reference = "scenes";
    run.reference_features = {{1, 1}, {3, 0}, {0, 2}};
    const auto rows = summarize(run);
    QCOMPARE(rows[0].featured, 2);
    QVERIFY(!rows[0].fd_ar.has_value());  // ar against itself says nothing
    QCOMPARE(*rows[0].fd_reference, *frechet_distance(FeatureVectors{{0, 1}, {2, 0}}, run.reference_features));
    QCOMPARE(*rows[1].fd_ar, *frechet_distance(FeatureVectors{{0, 1}, {2, 0.5}}, FeatureVectors{{0, 1}, {2, 0}}));
    QVERIFY(*rows[1].fd_ar > 0);
    QVERIFY(bench_csv(rows).find(",fd_reference,fd_ar,") != std::string::npos);
    QVERIFY(bench_markdown(run, rows).find("FD to data | FD to `ar` |") != std::string::npos);
    // The file keeps features and reference; shards merge to the same distances; another reference is another run.
    const BenchRun back = bench_run_from_json(nlohmann::json::parse(bench_run_to_json(run).dump()), "r.json");
    QCOMPARE(back.reference_features, run.reference_features);
    QCOMPARE(back.images[3].features, run.images[3].features);
    BenchRun a = run, b = run;
    a.shards = b.shards = 2;
    b.shard = 1;
    a.images = {run.images[0], run.images[1]};
    b.images = {run.images[2], run.images[3]};
    QCOMPARE(*summarize(merge_bench_runs({a, b}))[1].fd_reference, *rows[1].fd_reference);
    b.reference_features[0][0] = 5;
    QVERIFY(test::throws_error_containing([&] { merge_bench_runs({a, b}); }, "the parts come from different runs"));
    // Results written before the Fréchet distance (no features, no reference) still read, without distances.
    nlohmann::json old = bench_run_to_json(two_prompt_run());
    old.erase("reference");
    for (auto& image : old["images"]) image.erase("features");
    const auto old_rows = summarize(bench_run_from_json(old, "old.json"));
    QVERIFY(!old_rows[1].fd_reference && !old_rows[1].fd_ar);
  }

  // The table's machine line names OpenBLAS's kernel set: the same BLAS file runs AVX2 or AVX-512 kernels by CPU
  // (and by OPENBLAS_CORETYPE), about 2x apart in GEMM speed on an AVX-512 CPU.
  void the_machine_line_names_openblas_kernels() {
    using CoreName = const char* (*)();
    const auto core_name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    if (!core_name) QSKIP("the BLAS this process loaded is not OpenBLAS");
    const std::string machine = describe_runtime("cpu");
    QVERIFY2(machine.find("libopenblas") != std::string::npos, machine.c_str());
    QVERIFY2(machine.find(std::string("(") + core_name() + " kernels), decode-step kernels") != std::string::npos, machine.c_str());
  }
};

QTEST_GUILESS_MAIN(TestBenchRecords)
#include "test_bench_records.moc"
