// The speculative methods end to end: lossless methods reproduce ar's distribution over whole grids of a
// toy model (chi-squared over 10^5 draws; a relaxed rule fails the same test), SSD's rows of three cells are exact
// with a round per cell, the drafter's tree forward, the cache after a tree run equals one built token by token, LISA
// keeps strict acceptance as its floor, SSD takes one forward per round and commit, every method is deterministic and
// its metrics are what its events say, and bad requests name what is wrong.
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include <ATen/Parallel.h>

#include "decoding/codebook_geometry.h"
#include "decoding/method.h"
#include "decoding/tree_method.h"
#include "io/bundle.h"
#include "models/drafter.h"
#include "models/spatial_heads.h"
#include "models/transformer.h"
#include "models/vq_model.h"
#include "sampling/distribution.h"
#include "speculum.h"
#include "test_helpers.h"
#include "trace/timeline.h"
#include "trace/trace_io.h"

using namespace speculum;

namespace {

const std::vector<std::string> kSpeculative = {"eagle", "lantern", "lisa", "sjd", "ssd", "mulo"};

std::unique_ptr<Engine> load(const std::string& dir) {
  EngineParams p;
  p.bundle_dir = dir;
  p.device = "cpu";
  return Engine::load(p);
}

// The first `slots` slots of `cache` hold what feeding the prefix, then each committed token one at a time, gives.
void expect_cache_of_committed_tokens(const Transformer& target, const ConditionPrefix& prefix, const DecodeSession& session,
                                      const KVCache& cache, int slots) {
  KVCache reference = target.make_cache(static_cast<int>(prefix.embeddings.size(0)), 0);
  target.forward(DecodeSession::prefix_input(target, prefix), reference);
  for (int i = 0; i + 1 < session.total_tokens(); ++i) {
    ForwardInput step;
    step.tokens = at::tensor({static_cast<std::int64_t>(session.tokens()[i])}, at::kLong);
    step.positions = {session.position_of(i)};
    target.forward(step, reference);
  }
  QVERIFY(cache.length() >= slots);
  const std::vector<std::int64_t> positions(cache.positions().begin(), cache.positions().begin() + slots);
  QCOMPARE(positions, std::vector<std::int64_t>(reference.positions().begin(), reference.positions().begin() + slots));
  for (int l = 0; l < target.config().n_layer; ++l) {
    QVERIFY(at::allclose(cache.keys(l, slots), reference.keys(l, slots), 1e-4, 1e-4));
    QVERIFY(at::allclose(cache.values(l, slots), reference.values(l, slots), 1e-4, 1e-4));
  }
}

Transformer load_target(const BundleManifest& m) {
  return Transformer(
      m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), at::kCPU), at::kCPU);
}

// Upper 1e-4 tail of chi-squared with `df` degrees of freedom (Wilson-Hilferty).
double chi2_critical(int df) {
  const double z = 3.719, a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

// A toy class-conditional model small enough that the exact law of its whole grid can be enumerated.
struct ToyGrid {
  std::string dir;
  int side = 0, vocab = 0;
  std::vector<double> exact;  // probability of each grid, index = base-`vocab` digits in raster order
  int cells() const { return side * side; }
  // Token `cell` of grid index `g`.
  int token(std::size_t g, int cell) const {
    for (int i = cells() - 1; i > cell; --i) g /= static_cast<std::size_t>(vocab);
    return static_cast<int>(g % static_cast<std::size_t>(vocab));
  }
};

// Pearson's chi-squared of `counts` (out of `draws`) against `probability`, bins expected below 5 pooled into
// one; with its degrees of freedom.
std::pair<double, int> chi2_statistic(const std::vector<int>& counts, const std::vector<double>& probability, int draws) {
  double statistic = 0, pooled_expected = 0, pooled_observed = 0;
  int bins = 0;
  for (std::size_t g = 0; g < probability.size(); ++g) {
    const double expected = probability[g] * draws;
    if (expected < 5) {
      pooled_expected += expected;
      pooled_observed += counts[g];
      continue;
    }
    statistic += std::pow(counts[g] - expected, 2) / expected;
    ++bins;
  }
  if (pooled_expected >= 5) {
    statistic += std::pow(pooled_observed - pooled_expected, 2) / pooled_expected;
    ++bins;
  }
  return {statistic, bins - 1};
}

// Per-grid values summed into the joint law of one row's cells (index = that row's base-`vocab` digits).
template <typename T>
std::vector<T> row_marginal(const ToyGrid& toy, const std::vector<T>& per_grid, int row) {
  std::vector<T> marginal(static_cast<std::size_t>(std::pow(toy.vocab, toy.side)), T{});
  for (std::size_t g = 0; g < per_grid.size(); ++g) {
    std::size_t r = 0;
    for (int x = 0; x < toy.side; ++x) r = r * toy.vocab + toy.token(g, row * toy.side + x);
    marginal[r] += per_grid[g];
  }
  return marginal;
}

}  // namespace

class TestSpeculative : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  ToyGrid toy_;        // 2x2, 4 codes: every lossless method
  ToyGrid toy_wide_;   // 3x3, 3 codes: SSD's rows of three drafted cells
  std::unique_ptr<Engine> text_;
  SamplingParams toy_sampling_;

  ToyGrid make_toy_grid(const std::string& name, int side, int vocab) {
    ToyGrid toy{dir_.path().toStdString() + "/" + name, side, vocab, {}};
    RandomBundleParams p;
    p.out_dir = toy.dir;
    p.preset = "tiny";
    p.condition = "class";
    p.dim = 32;
    p.n_layer = 1;
    p.n_head = 2;
    p.grid = side;
    p.vocab = vocab;
    p.seed = 3;
    create_random_bundle(p);
    toy.exact = exact_grid_distribution(toy);
    return toy;
  }

  // The exact law by enumeration: one teacher-forced pass per grid less its last cell gives every
  // conditional along it, and the last cell's distribution covers all `vocab` grids that share that start.
  std::vector<double> exact_grid_distribution(const ToyGrid& toy) {
    c10::InferenceMode inference;
    const BundleManifest m = read_manifest(toy.dir);
    const Transformer target = load_target(m);
    const ConditionPrefix prefix = target.class_prefix(0, 2);
    KVCache cache = target.make_cache(2, 0);
    ForwardInput in;
    in.embeddings = prefix.embeddings;
    in.positions = target.prefix_positions();
    in.attendable = prefix.attendable;
    in.logits_last = 1;
    const at::Tensor first = target_distribution(target.forward(in, cache).logits, toy_sampling_).to(at::kDouble);
    const int prefix_length = cache.length(), n = toy.cells();
    std::vector<double> probability(static_cast<std::size_t>(std::pow(toy.vocab, n)));
    for (std::size_t start = 0; start < probability.size() / toy.vocab; ++start) {
      std::vector<std::int64_t> tokens(n - 1);
      for (int i = 0; i < n - 1; ++i) tokens[i] = toy.token(start * toy.vocab, i);
      cache.truncate(prefix_length);
      ForwardInput rest;
      rest.tokens = at::tensor(tokens, at::kLong);
      for (int i = 0; i < n - 1; ++i) rest.positions.push_back(m.target.cls_token_num + i);
      const at::Tensor next = target_distribution(target.forward(rest, cache).logits, toy_sampling_).to(at::kDouble);
      const auto p_next = next.accessor<double, 2>();
      double p_start = first[0][tokens[0]].item<double>();
      for (int i = 1; i < n - 1; ++i) p_start *= p_next[i - 1][tokens[i]];
      for (int last = 0; last < toy.vocab; ++last) probability[start * toy.vocab + last] = p_start * p_next[n - 2][last];
    }
    return probability;
  }

  // How often each grid came out of `draws` runs of `method` on `toy`. Runs the method on the engine's own
  // parts without the engine's per-request work (logging, image decoding), which would dominate on a toy grid.
  std::vector<int> draw_grids(const ToyGrid& toy, const std::string& method, const MethodOptions& options, int draws) {
    c10::InferenceMode inference;
    const BundleManifest m = read_manifest(toy.dir);
    const Transformer target = load_target(m);
    std::map<std::string, std::unique_ptr<Drafter>> drafters;
    MethodResources resources;
    resources.bundle = m.dir;
    for (const auto& [name, entry] : m.drafters) {
      drafters[name] = std::make_unique<Drafter>(
          target, load_tensors(SafetensorsFile::open(m.drafter_path(name)), drafter_tensor_specs(m.target), at::kCPU));
      resources.drafters[name] = drafters[name].get();
    }
    std::unique_ptr<SpatialHeads> heads;
    if (const auto& h = m.ssd_heads) {
      heads = std::make_unique<SpatialHeads>(
          target, load_tensors(SafetensorsFile::open(m.ssd_heads_path()), spatial_heads_tensor_specs(m.target, h->horizontal, h->vertical), at::kCPU),
          h->horizontal, h->vertical);
      resources.ssd_heads = heads.get();
    }
    const CodebookGeometry geometry(at::randn({toy.vocab, 8}), 3);  // the toy's codes are random anyway
    resources.geometry = &geometry;
    resources.soft_bounds = m.soft_verification;
    const auto decoder = make_method(method, options, resources);
    const ConditionPrefix prefix = target.class_prefix(0, 2);
    std::vector<int> counts(toy.exact.size(), 0);
    for (int s = 0; s < draws; ++s) {
      KVCache cache = target.make_cache(2, decoder->extra_cache_slots());
      DecodeSession session(target, cache, prefix, toy_sampling_, static_cast<std::uint64_t>(s), {}, {}, nullptr);
      decoder->run(session);
      std::size_t g = 0;
      for (int t : session.tokens()) g = g * toy.vocab + t;
      ++counts[g];
    }
    return counts;
  }

 private Q_SLOTS:
  void initTestCase() {
    at::set_num_threads(1);  // a toy grid's ops are too small to share
    toy_sampling_.cfg_scale = 2.0f;
    toy_ = make_toy_grid("toy", 2, 4);
    toy_wide_ = make_toy_grid("toy-wide", 3, 3);
    for (const ToyGrid* toy : {&toy_, &toy_wide_}) {
      double total = 0;
      for (double p : toy->exact) total += p;
      QVERIFY(std::abs(total - 1) < 1e-4);
    }
    text_ = load(test::bundles_dir() + "/tiny-text");
  }

  void lossless_methods_reproduce_the_target_distribution_data() {
    QTest::addColumn<QString>("method");
    QTest::addColumn<QString>("option");
    QTest::addColumn<double>("value");
    QTest::addColumn<bool>("lossless");
    QTest::addColumn<int>("draws");
    QTest::newRow("ar") << "ar"
                        << "" << 0.0 << true << 20000;
    QTest::newRow("eagle") << "eagle"
                           << "" << 0.0 << true << 100000;
    QTest::newRow("eagle, a chain") << "eagle"
                                    << "top_k" << 1.0 << true << 20000;
    QTest::newRow("sjd, left-neighbour init") << "sjd"
                                              << "" << 0.0 << true << 100000;
    QTest::newRow("sjd, random init") << "sjd"
                                      << "init" << 1.0 << true << 20000;
    QTest::newRow("lisa, drafter only") << "lisa"
                                        << "soft" << 0.0 << true << 20000;
    // SSD on a 2x2 grid: row 0's one drafted cell is tested once in a final context, and row 1's two cells
    // get two rounds, enough for each to be tested in its final context: exact speculative sampling.
    QTest::newRow("ssd") << "ssd"
                         << "" << 0.0 << true << 20000;
    QTest::newRow("ssd, row 1 unverified (lossy)") << "ssd"
                                                   << "rounds" << 0.0 << false << 20000;
    // The same test on a deliberately relaxed rule must fail: LANTERN pooling half the mass.
    QTest::newRow("lantern delta 0.5 (lossy)") << "lantern"
                                               << "delta" << 0.5 << false << 20000;
  }
  void lossless_methods_reproduce_the_target_distribution() {
    QFETCH(QString, method);
    QFETCH(QString, option);
    QFETCH(double, value);
    QFETCH(bool, lossless);
    QFETCH(int, draws);
    MethodOptions options;
    if (!option.isEmpty()) options[option.toStdString()] = value;
    const auto [statistic, df] = chi2_statistic(draw_grids(toy_, method.toStdString(), options, draws), toy_.exact, draws);
    const double critical = chi2_critical(df);
    qInfo("%s, %d draws: chi2 %.1f on %d degrees of freedom (critical %.1f at p = 1e-4)", qPrintable(method), draws,
          statistic, df, critical);
    QVERIFY(df > 50);
    if (lossless)
      QVERIFY(statistic < critical);
    else
      QVERIFY(statistic > critical);
  }

  // SSD's rows of three drafted cells, on a 3x3 grid: with a round per cell (three per row, two for row 0's
  // chunk of two) every cell is tested in its final context, so the whole grid's law and each row's are exact,
  // with early stop or without; with one round the cells after a replacement go in stale, which the same
  // statistics must catch.
  void ssd_with_a_round_per_cell_is_exact_on_rows_of_three_data() {
    QTest::addColumn<int>("rounds");
    QTest::addColumn<bool>("early_stop");
    QTest::addColumn<bool>("lossless");
    QTest::newRow("a round per cell") << 3 << true << true;
    QTest::newRow("a round per cell, no early stop") << 3 << false << true;
    QTest::newRow("one round (lossy)") << 1 << true << false;
  }
  void ssd_with_a_round_per_cell_is_exact_on_rows_of_three() {
    QFETCH(int, rounds);
    QFETCH(bool, early_stop);
    QFETCH(bool, lossless);
    const int draws = 30000;
    const MethodOptions options{{"rounds", rounds}, {"row0_rounds", std::min(rounds, 2)}, {"early_stop", early_stop ? 1 : 0}};
    const std::vector<int> counts = draw_grids(toy_wide_, "ssd", options, draws);
    std::vector<std::pair<std::string, std::pair<double, int>>> laws = {
        {"whole grid", chi2_statistic(counts, toy_wide_.exact, draws)}};
    for (int row = 0; row < toy_wide_.side; ++row)
      laws.push_back({"row " + std::to_string(row), chi2_statistic(row_marginal(toy_wide_, counts, row),
                                                                   row_marginal(toy_wide_, toy_wide_.exact, row), draws)});
    int beyond = 0;
    for (const auto& [law, result] : laws) {
      const auto [statistic, df] = result;
      const double critical = chi2_critical(df);
      qInfo("ssd rounds %d, %s: chi2 %.1f on %d degrees of freedom (critical %.1f at p = 1e-4)", rounds, law.c_str(),
            statistic, df, critical);
      QVERIFY(df >= 15);
      if (lossless) QVERIFY2(statistic < critical, law.c_str());
      beyond += statistic > critical;
    }
    if (!lossless) QVERIFY(beyond > 0);
  }

  void drafter_tree_calls_match_its_teacher_forward() {
    // A path grown over three cached calls (each seeing only its own ancestors among decoys) predicts the
    // same features as one causal pass over the path.
    c10::InferenceMode inference;
    const BundleManifest m = read_manifest(test::bundles_dir() + "/tiny-text");
    const Transformer target = load_target(m);
    const Drafter drafter(
        target, load_tensors(SafetensorsFile::open(m.drafter_path("eagle")), drafter_tensor_specs(m.target), at::kCPU));
    const auto dim = m.target.dim;
    const at::Tensor features = at::randn({1, 4, dim});
    const std::vector<std::int64_t> path = {3, 9, 4, 7};
    const at::Tensor whole = drafter.forward_teacher(at::tensor(path, at::kLong).unsqueeze(0), features);
    KVCache cache = drafter.make_cache(1, 16);
    const auto pos = [&](int i) { return static_cast<std::int64_t>(m.target.cls_token_num + i); };
    const at::Tensor first = drafter.forward(at::tensor({path[0], path[1]}, at::kLong), features.narrow(1, 0, 2),
                                             {pos(0), pos(1)}, {}, cache);
    // Call 2: the path's third token beside a decoy sibling (slot order: [decoy, path]); each sees its ancestors.
    at::Tensor attend = at::zeros({2, 2}, at::kBool);
    attend[0][0] = attend[1][1] = true;
    const at::Tensor second = drafter.forward(at::tensor({std::int64_t{1}, path[2]}, at::kLong),
                                              at::cat({at::randn({1, 1, dim}), features.narrow(1, 2, 1)}, 1),
                                              {pos(2), pos(2)}, attend, cache);
    // Call 3: the last token sees the path slot of call 2, not the decoy.
    at::Tensor attend3 = at::zeros({1, 3}, at::kBool);
    attend3[0][1] = attend3[0][2] = true;
    const at::Tensor third =
        drafter.forward(at::tensor({path[3]}, at::kLong), features.narrow(1, 3, 1), {pos(3)}, attend3, cache);
    const at::Tensor incremental = at::cat({first, second.narrow(1, 1, 1), third}, 1);
    QVERIFY2(at::allclose(incremental, whole, 1e-4, 1e-4), "tree-masked drafter calls differ from the causal pass");
  }

  void cache_after_a_tree_run_equals_token_by_token() {
    c10::InferenceMode inference;
    const BundleManifest m = read_manifest(test::bundles_dir() + "/tiny-text");
    const Transformer target = load_target(m);
    const Drafter drafter(
        target, load_tensors(SafetensorsFile::open(m.drafter_path("eagle")), drafter_tensor_specs(m.target), at::kCPU));
    MethodResources resources;
    resources.bundle = m.dir;
    resources.drafters["eagle"] = &drafter;
    SamplingParams sampling;
    sampling.cfg_scale = 3.0f;
    const ConditionPrefix prefix = target.text_prefix({1, 2, 3}, 2);
    KVCache cache = target.make_cache(2, 65);
    int longest_step = 0;
    DecodeSession session(
        target, cache, prefix, sampling, 17,
        [&](const Event& e) {
          if (const auto* c = std::get_if<Commit>(&e)) longest_step = std::max<int>(longest_step, c->cells.size());
        },
        {}, nullptr);
    // A wide tree, so that a random model's flat distributions still accept multi-token paths.
    make_method("eagle", {{"top_k", 16}, {"total_tokens", 64}, {"depth", 4}}, resources)->run(session);
    QVERIFY(session.complete());
    QVERIFY(longest_step > 1);  // the test means something only if tree paths were accepted
    QCOMPARE(cache.length(), static_cast<int>(prefix.attendable.size()) + session.total_tokens() - 1);
    expect_cache_of_committed_tokens(target, prefix, session, cache, cache.length());
  }

  // MuLo-SD re-feeds the cells that resampling changed (and everything after the first) with the next cycle's
  // verifying pass: every cycle but the last leaves exact keys and values, many small islands or one.
  void cache_after_mulo_holds_the_committed_tokens() {
    c10::InferenceMode inference;
    const BundleManifest m = read_manifest(test::bundles_dir() + "/tiny-text");
    const Transformer target = load_target(m);
    const Transformer low_res(m.low_res_config(), load_tensors(SafetensorsFile::open(m.low_res_drafter_path()),
                                                               gpt_tensor_specs(m.low_res_config()), at::kCPU), at::kCPU);
    const VqModel tokenizer = VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU);
    const CodebookGeometry geometry(tokenizer.normalized_codebook(), 32);
    MethodResources resources;
    resources.bundle = m.dir;
    resources.low_res_drafter = &low_res;
    resources.tokenizer = &tokenizer;
    resources.geometry = &geometry;
    SamplingParams sampling;
    sampling.cfg_scale = 3.0f;
    const ConditionPrefix prefix = target.text_prefix({1, 2, 3}, 2);
    for (const double radius : {0.0, 1.0}) {
      KVCache cache = target.make_cache(2, 0);
      int islands = 0;
      DecodeSession session(
          target, cache, prefix, sampling, 17,
          [&](const Event& e) {
            if (const auto* r = std::get_if<Region>(&e); r && r->kind == "island") ++islands;
          },
          {}, nullptr);
      session.set_condition_source([](const Transformer& model) { return model.text_prefix({1, 2, 3}, 2); });
      make_method("mulo", {{"tau", 0.09}, {"radius", radius}}, resources)->run(session);
      QVERIFY(session.complete());
      // Several islands (small ones at radius 0), so passes change cells behind other islands' cells.
      qInfo("radius %g: %d islands", radius, islands);
      QVERIFY2(islands >= (radius == 0 ? 6 : 3), qPrintable(QString("%1 islands").arg(islands)));
      expect_cache_of_committed_tokens(target, prefix, session, cache, static_cast<int>(prefix.attendable.size()) + 48);
    }
  }

  void every_method_is_deterministic_and_its_metrics_are_its_events() {
    for (const std::string& method : kSpeculative) {
      GenerateParams p;
      p.prompt = "a red circle above a blue square";
      p.seed = 4;
      p.method = method;
      // At its default τ (0.9, and even at 0.09) MuLo-SD rejects every draft of the tiny random bundle.
      if (method == "mulo") p.method_options["tau"] = 0.01;
      std::vector<Event> events;
      Callbacks cb;
      cb.event = [&](const Event& e) { events.push_back(e); };
      const GenerateResult a = text_->generate(p, cb);
      QCOMPARE(text_->generate(p).tokens, a.tokens);
      p.seed = 5;
      QVERIFY(text_->generate(p).tokens != a.tokens);
      int nfe = 0, committed = 0, steps = 0;
      for (const Event& e : events) {
        if (const auto* s = std::get_if<StepEnd>(&e)) {
          nfe += s->fwd_passes_step;
          QVERIFY(s->fwd_passes_step <= 1);  // at most one target forward per step
          ++steps;
        }
        if (const auto* c = std::get_if<Commit>(&e)) committed += static_cast<int>(c->cells.size());
      }
      QCOMPARE(committed, 64);
      QCOMPARE(a.metrics.tokens, 64);
      QCOMPARE(a.metrics.nfe, nfe);
      QCOMPARE(a.metrics.mean_accepted_length(), 64.0 / nfe);
      QVERIFY2(nfe < 64, qPrintable(QString::fromStdString(method) + " used " + QString::number(nfe) + " forwards"));
      for (int t : a.tokens) QVERIFY(t >= 0 && t < text_->info().vocab_size);
    }
  }

  // Each Commit summarises the target row that judged its tokens: entropy and top candidates agree with each
  // other (the top terms bound the entropy from both sides); under greedy sampling a lossless method's row is
  // one-hot at the committed token (a wrong row would name another token), and ar's p is its row's.
  void commits_summarise_the_target_distribution_of_each_cell() {
    const double log_v = std::log(static_cast<double>(text_->info().vocab_size));
    for (const std::string& method : std::vector<std::string>{"ar", "sjd", "eagle", "lisa", "lantern", "ssd", "mulo"}) {
      // (SSD at its default rounds commits some cells never tested in their final context: not lossless here.)
      const bool lossless = method == "ar" || method == "sjd" || method == "eagle";
      for (const float temperature : {1.0f, 0.0f}) {
        GenerateParams p;
        p.prompt = "a green star left of a red circle";
        p.seed = 9;
        p.method = method;
        p.sampling.temperature = temperature;
        std::vector<Commit> commits;
        Callbacks cb;
        cb.event = [&](const Event& e) {
          if (const auto* c = std::get_if<Commit>(&e)) commits.push_back(*c);
        };
        text_->generate(p, cb);
        int cells = 0;
        for (const Commit& c : commits) {
          const std::size_t n = c.cells.size();
          QCOMPARE(c.entropy.size(), n);
          QCOMPARE(c.top_tokens.size(), n * kTopCandidates);
          QCOMPARE(c.top_p.size(), n * kTopCandidates);
          for (std::size_t i = 0; i < n; ++i, ++cells) {
            const float* top = &c.top_p[i * kTopCandidates];
            const int* top_tokens = &c.top_tokens[i * kTopCandidates];
            double mass = 0, top_entropy = 0;
            for (int k = 0; k < kTopCandidates; ++k) {
              QVERIFY(top[k] >= 0 && top[k] <= 1.0f + 1e-6f);
              if (k > 0) QVERIFY(top[k] <= top[k - 1]);
              mass += top[k];
              if (top[k] > 0) top_entropy -= top[k] * std::log(top[k]);
            }
            const double rest = std::max(0.0, 1 - mass), others = text_->info().vocab_size - kTopCandidates;
            const double rest_bound = rest > 1e-9 ? -rest * std::log(rest / others) : 0;
            QVERIFY2(c.entropy[i] >= top_entropy - 1e-4 && c.entropy[i] <= top_entropy + rest_bound + 1e-4 &&
                         c.entropy[i] <= log_v + 1e-4,
                     qPrintable(QString::fromStdString(method) + ": entropy " + QString::number(c.entropy[i])));
            if (temperature == 0 && lossless) {
              QCOMPARE(c.entropy[i], 0.0f);
              QCOMPARE(top[0], 1.0f);
              QCOMPARE(top_tokens[0], c.tokens[i]);
            }
            if (method == "ar" && temperature != 0) {
              QVERIFY(c.p_of_token[i] <= top[0]);
              const auto hit = std::find(top_tokens, top_tokens + kTopCandidates, c.tokens[i]);
              if (hit != top_tokens + kTopCandidates) QCOMPARE(c.p_of_token[i], top[hit - top_tokens]);
            }
          }
        }
        QCOMPARE(cells, text_->info().grid_rows * text_->info().grid_cols);
      }
    }
  }

  void traces_of_every_method_replay_to_the_same_grid() {
    for (const std::string& method : kSpeculative) {
      const std::string path = dir_.path().toStdString() + "/" + method + ".jsonl";
      std::vector<Event> live;
      TraceWriter writer(path);
      Callbacks cb;
      cb.event = [&](const Event& e) {
        live.push_back(e);
        writer.write(e);
      };
      GenerateParams p;
      p.prompt = "three blue squares";
      p.seed = 8;
      p.method = method;
      const GenerateResult r = text_->generate(p, cb);
      writer.finish();
      const std::vector<Event> replay = read_trace(path);
      QVERIFY2(replay == live, method.c_str());  // tree nodes and soft-verification fields survive the file
      const Timeline timeline(replay);
      QCOMPARE(timeline.state_after(timeline.step_count()).committed_tokens(), r.tokens);
      QCOMPARE(timeline.metrics().nfe, r.metrics.nfe);
    }
  }

  void ssd_takes_one_forward_per_round_and_commit() {
    // 8x8 grid: the prefix forward (which samples cell 0), row 0's seven other cells in chunks of `horizontal`
    // (row0_rounds + 1 forwards each), then blocks of `vertical` rows (rounds + 1 forwards each, fewer with
    // early stop, which commits from the first round that replaces nothing).
    for (const auto& [horizontal, vertical, rounds, row0_rounds] :
         {std::array{5, 1, 2, 1}, std::array{3, 2, 0, 0}, std::array{1, 1, 1, 2}, std::array{5, 2, 3, 1}}) {
      const auto expected = [&](bool most) {
        const int chunks = (7 + horizontal - 1) / horizontal, blocks = (7 + vertical - 1) / vertical;
        return 1 + chunks * (most ? row0_rounds + 1 : 1) + blocks * (most ? rounds + 1 : 1);
      };
      GenerateParams p;
      p.prompt = "two green stars";
      p.seed = 3;
      p.method = "ssd";
      p.method_options = {{"horizontal", horizontal}, {"vertical", vertical}, {"rounds", rounds}, {"row0_rounds", row0_rounds},
                          {"early_stop", 0}};
      int frontier_cells = 0;
      Callbacks cb;
      cb.event = [&](const Event& e) {
        if (const auto* f = std::get_if<Frontier>(&e)) frontier_cells += static_cast<int>(f->cells.size());
      };
      const GenerateResult exact = text_->generate(p, cb);
      QCOMPARE(exact.metrics.nfe, expected(true));
      QCOMPARE(exact.metrics.tokens, 64);
      QCOMPARE(frontier_cells, 63);  // every cell but the first is drafted once as part of a frontier
      p.method_options["early_stop"] = 1;
      const int nfe = text_->generate(p).metrics.nfe;
      QVERIFY(nfe <= expected(true) && nfe >= expected(false));
    }
    // STAGED(b, i) on blocks of two rows: b rounds, the first row's commit, i rounds, the second row's commit;
    // rows 1..7 make three two-row blocks and a last one-row block (joint, `rounds`).
    for (const auto& [b, i] : {std::array{1, 1}, std::array{2, 0}, std::array{1, 3}}) {
      GenerateParams p;
      p.prompt = "two green stars";
      p.seed = 3;
      p.method = "ssd";
      p.method_options = {{"horizontal", 5}, {"vertical", 2}, {"rounds", 2}, {"row0_rounds", 1}, {"early_stop", 0},
                          {"schedule", 1}, {"staged_b", b}, {"staged_i", i}};
      const GenerateResult staged = text_->generate(p);
      QCOMPARE(staged.metrics.nfe, 1 + 2 * 2 + 3 * (b + i + 2) + (2 + 1));
      QCOMPARE(staged.metrics.tokens, 64);
    }
  }

  void lisa_keeps_strict_acceptance_as_its_floor() {
    GenerateParams p;
    p.prompt = "two green stars";
    p.method = "lisa";
    p.method_options["soft"] = 1;  // off by default
    int soft = 0, strict = 0;
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      p.seed = seed;
      Callbacks cb;
      cb.event = [&](const Event& e) {
        const auto* v = std::get_if<Verify>(&e);
        if (!v) return;
        for (std::size_t i = 0; i < v->cells.size(); ++i) {
          const bool strictly = v->u[i] < v->p_of_token[i];
          if (strictly) QCOMPARE(v->decisions[i], Decision::StrictAccept);  // never rejected, never relabelled
          if (v->decisions[i] == Decision::SoftAccept) {
            QVERIFY(!strictly);
            QVERIFY(v->soft_score[i] >= 0 && v->soft_delta[i] >= 0);
            ++soft;
          }
          strict += v->decisions[i] == Decision::StrictAccept;
        }
      };
      text_->generate(p, cb);
    }
    QVERIFY(soft > 0);
    QVERIFY(strict > 0);
    // Switching soft verification off leaves only strict decisions.
    p.method_options["soft"] = 0;
    bool any_soft = false;
    Callbacks cb;
    cb.event = [&](const Event& e) {
      if (const auto* v = std::get_if<Verify>(&e))
        for (Decision d : v->decisions) any_soft |= d == Decision::SoftAccept;
    };
    text_->generate(p, cb);
    QVERIFY(!any_soft);
  }

  void bad_requests_name_the_problem() {
    GenerateParams p;
    p.prompt = "a red circle";
    p.method = "eagle";
    p.method_options["depth"] = 0;
    EXPECT_ERROR(text_->generate(p), "method 'eagle': depth = 0.000000 is outside [1.000000, 16.000000]");
    p.method_options = {{"delta", 0.1}};
    EXPECT_ERROR(text_->generate(p), "method 'eagle' has no parameter 'delta' (allowed: depth, top_k, total_tokens)");
    p.method = "lantern";
    p.method_options = {{"lambda", 0.5}};
    EXPECT_ERROR(text_->generate(p), "lambda must be 0 (off) or > 1");
    p.method = "sjd";
    p.method_options = {{"window", 1}};
    EXPECT_ERROR(text_->generate(p), "window = 1.000000 is outside [2.000000, 64.000000]");
    p.method = "ssd";
    p.method_options = {{"horizontal", 6}};
    EXPECT_ERROR(text_->generate(p), "method 'ssd': horizontal = 6, but bundle '" + test::bundles_dir() + "/tiny-text' has 5 horizontal heads");
    p.method_options = {{"vertical", 3}};
    EXPECT_ERROR(text_->generate(p), "vertical = 3.000000 is outside [1.000000, 2.000000]");
    p.method_options = {{"schedule", 2}};  // an enumeration's refusal says what each value means
    EXPECT_ERROR(text_->generate(p), "schedule = 2.000000 is outside [0.000000, 1.000000] or not an integer (0 = joint, 1 = staged)");
    p.method_options = {{"early_stop", 0.5}};
    EXPECT_ERROR(text_->generate(p), "or not an integer (0 = off, 1 = on)");
    p.method = "mulo";
    p.method_options = {{"tau", 1.5}};
    EXPECT_ERROR(text_->generate(p), "method 'mulo': tau = 1.500000 is outside [0.000000, 1.000000]");
    p.method_options = {{"radius", 1.5}};
    EXPECT_ERROR(text_->generate(p), "radius = 1.500000 is outside [0.000000, 8.000000] or not an integer");
    p.method_options = {{"rows_per_cycle", 65}};
    EXPECT_ERROR(text_->generate(p), "rows_per_cycle = 65.000000 is outside [1.000000, 64.000000] or not an integer (0 = auto)");
  }

  // Under greedy sampling with τ = 1 and no pooling a cell is accepted only if it is the target's choice in its
  // drafted context, and a radius that spans the block reopens the whole block once any cell is rejected: then
  // it is redrawn from the target in raster order with an exact context. Either way the tokens are ar's, side
  // by side or serially, whatever the drafter drew.
  void mulo_with_tau_one_is_the_target_under_greedy_sampling() {
    GenerateParams p;
    p.prompt = "two green stars";
    p.sampling.temperature = 0;
    const std::vector<int> ar = text_->generate(p).tokens;
    p.method = "mulo";
    for (const double parallel : {1.0, 0.0}) {
      p.method_options = {{"tau", 1}, {"neighbours", 0}, {"radius", 8}, {"parallel", parallel}};
      const GenerateResult r = text_->generate(p);
      QCOMPARE(r.tokens, ar);
      QVERIFY(r.metrics.nfe <= 64);  // never more target passes than ar
    }
  }

  // τ = 0 accepts every up-sampled cell: one target pass per cycle (after the first token's), and the image is
  // the up-sampler's output. Each cycle drafts one low-resolution row: 4 cycles on the 8x8 test grid.
  void mulo_with_tau_zero_commits_the_upsampled_rows_in_one_pass_each() {
    GenerateParams p;
    p.prompt = "a red circle above a blue square";
    p.seed = 2;
    p.method = "mulo";
    for (const int rows : {1, 2, 4}) {
      p.method_options = {{"tau", 0}, {"rows_per_cycle", rows}};
      std::vector<int> upsampled(64, -1);
      int low_res_cells = 0, regions = 0;
      Callbacks cb;
      cb.event = [&](const Event& e) {
        if (const auto* d = std::get_if<Draft>(&e); d && d->source == "upsampler")
          for (std::size_t i = 0; i < d->cells.size(); ++i) upsampled[d->cells[i].row * 8 + d->cells[i].col] = d->tokens[i];
        if (const auto* d = std::get_if<Draft>(&e); d && d->source == "low_res") low_res_cells += static_cast<int>(d->cells.size());
        regions += std::holds_alternative<Region>(e);
      };
      const GenerateResult r = text_->generate(p, cb);
      QCOMPARE(r.metrics.nfe, 1 + 4 / rows);
      QCOMPARE(low_res_cells, 16);
      QCOMPARE(regions, 0);
      upsampled[0] = r.tokens[0];  // the first token is the target's own
      QCOMPARE(r.tokens, upsampled);
    }
  }

  // Each island is redrawn in raster order, one target pass per island position (the first from the verifying
  // pass itself): a cycle costs 1 + (longest island - 1) passes side by side, 1 + (cells - 1) serially.
  void mulo_resampling_passes_follow_the_islands() {
    GenerateParams p;
    p.prompt = "three blue squares";
    p.method = "mulo";
    for (const double parallel : {1.0, 0.0}) {
      p.method_options = {{"tau", 0.09}, {"parallel", parallel}};
      int expected = 1;  // the first token's pass
      std::size_t longest = 0, reopened = 0;
      int island_cells = 0;
      Callbacks cb;
      cb.event = [&](const Event& e) {
        if (std::holds_alternative<Verify>(e)) longest = reopened = 0;
        if (const auto* r = std::get_if<Region>(&e); r && r->kind == "island") {
          longest = std::max(longest, r->cells.size());
          island_cells += static_cast<int>(r->cells.size());
        }
        if (const auto* r = std::get_if<Region>(&e); r && r->kind == "expansion") reopened = r->cells.size();
        if (std::holds_alternative<Commit>(e) && !std::get<Commit>(e).cells.empty() && std::get<Commit>(e).cells.size() > 1)
          expected += 1 + static_cast<int>(parallel != 0 ? (longest ? longest - 1 : 0) : (reopened ? reopened - 1 : 0));
      };
      const GenerateResult r = text_->generate(p, cb);
      QVERIFY2(island_cells > 0, "τ = 0.09 should reject some cells of the random model");
      QCOMPARE(r.metrics.nfe, expected);
    }
  }

  void a_bundle_without_drafters_lists_and_explains_what_it_cannot_run() {
    const std::string dir = dir_.path().toStdString() + "/bare";
    RandomBundleParams bare;
    bare.out_dir = dir;
    bare.preset = "tiny";
    bare.drafters = false;
    create_random_bundle(bare);
    const auto engine = load(dir);
    QCOMPARE(engine->info().methods, (std::vector<std::string>{"ar", "sjd"}));
    QCOMPARE(text_->info().methods, (std::vector<std::string>{"ar", "eagle", "lantern", "lisa", "sjd", "ssd", "mulo"}));
    GenerateParams p;
    p.prompt = "a red circle";
    p.method = "eagle";
    EXPECT_ERROR(engine->generate(p), "method 'eagle' needs the 'eagle' drafter, and bundle '" + dir + "' has none");
    p.method = "lisa";
    p.method_options["soft"] = 1;
    EXPECT_ERROR(engine->generate(p), "method 'lisa' needs soft-verification bounds");
    p.method_options["soft"] = 0;
    EXPECT_ERROR(engine->generate(p), "needs the 'lisa' drafter");
    p.method = "ssd";
    p.method_options.clear();
    EXPECT_ERROR(engine->generate(p), "method 'ssd' needs SSD heads, and bundle '" + dir + "' has none (train it: speculum-cli train ssd-heads");
    p.method = "mulo";
    EXPECT_ERROR(engine->generate(p), "method 'mulo' needs a low-resolution drafter, and bundle '" + dir + "' has none");
    p.method = "sjd";
    QCOMPARE(engine->generate(p).metrics.tokens, 64);
  }
};

QTEST_GUILESS_MAIN(TestSpeculative)
#include "test_speculative.moc"
