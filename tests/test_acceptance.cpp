// The acceptance rules and the draft tree as pure functions: strict acceptance and its residual,
// LANTERN's pooling within its total-variation budget, LISA's soft rule on hand-made cases, and the
// tree's mask, positions and pruning against naive walks.
#include <cmath>
#include <random>

#include "decoding/acceptance.h"
#include "decoding/codebook_geometry.h"
#include "decoding/draft_tree.h"
#include "decoding/local_regions.h"
#include "test_helpers.h"

using namespace speculum;

namespace {

Probabilities probabilities(std::vector<float> values) {
  return values;
}

// A random distribution over `v` tokens with some exact zeros (as top-k leaves them).
Probabilities random_distribution(std::mt19937& rng, int v) {
  std::exponential_distribution<float> e(1.0f);
  std::vector<float> p(v);
  for (auto& x : p) x = (rng() % 5 == 0) ? 0.0f : std::pow(e(rng), 3.0f);
  p[rng() % v] += 0.01f;
  double total = 0;
  for (float x : p) total += x;
  for (float& x : p) x = static_cast<float>(x / total);
  return p;
}

bool near(const Probabilities& a, const Probabilities& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > 1e-6) return false;
  return true;
}

}  // namespace

class TestAcceptance : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void strict_acceptance_is_min_one_ratio() {
    QCOMPARE(strict_acceptance(0.2, 0.4), 0.5);
    QCOMPARE(strict_acceptance(0.6, 0.4), 1.0);
    QCOMPARE(strict_acceptance(0.0, 0.4), 0.0);
  }

  void removing_a_draft_renormalises_the_rest() {
    const Probabilities p = probabilities({0.5f, 0.25f, 0.25f, 0.0f});
    QVERIFY(near(remove_tokens(p, {0}), {0.0f, 0.5f, 0.5f, 0.0f}));
    // Removing all the mass leaves p as it was (nothing else to draw from).
    QCOMPARE(remove_tokens(p, {0, 1, 2}), p);
  }

  void lantern_pools_nearest_neighbours_within_delta() {
    // Token 0's neighbours, nearest first: 1 (0.05), 2 (0.04), 3 (0.3).
    const Probabilities p = probabilities({0.1f, 0.05f, 0.04f, 0.3f, 0.51f});
    const int nearest[] = {1, 2, 3, 4};
    PooledProbability pool = lantern_pool(p, 0, nearest, 4, 0.1);
    QCOMPARE(pool.neighbours, (std::vector<int>{1, 2}));
    QVERIFY(std::abs(pool.pooled - 0.09) < 1e-6);
    QVERIFY(std::abs(pool.p_tilde - 0.19) < 1e-6);
    // The budget binds at the first neighbour whose mass would exceed it: nothing after it is pooled.
    pool = lantern_pool(p, 0, nearest, 4, 0.04);
    QVERIFY(pool.neighbours.empty());
    QCOMPARE(pool.p_tilde, double(0.1f));
    // k limits the neighbourhood.
    QCOMPARE(lantern_pool(p, 0, nearest, 1, 0.5).neighbours, std::vector<int>{1});
    // LANTERN++: p̃ <= λ·p(x) instead of a TV budget (λ = 2: at most p(x) = 0.1 pooled).
    pool = lantern_pool(p, 0, nearest, 4, 0.0, 2.0);
    QCOMPARE(pool.neighbours, (std::vector<int>{1, 2}));
    QVERIFY(pool.p_tilde <= 2 * 0.1 + 1e-6);
  }

  void lantern_keeps_total_variation_within_delta_for_random_p() {
    std::mt19937 rng(5);
    const int v = 64;
    const CodebookGeometry geometry(at::randn({v, 4}, at::TensorOptions().dtype(at::kFloat)), 63);
    for (int trial = 0; trial < 500; ++trial) {
      const Probabilities p = random_distribution(rng, v);
      const int x = static_cast<int>(rng() % v);
      const double delta = (rng() % 1000) / 1000.0 * 0.5;
      const PooledProbability pool = lantern_pool(p, x, geometry.nearest(x), 63, delta);
      // p̃ moves the pooled neighbours' mass onto x: TV(p, p̃) is exactly that mass.
      std::vector<double> p_tilde(p.begin(), p.end());
      for (int n : pool.neighbours) p_tilde[n] = 0;
      p_tilde[x] = pool.p_tilde;
      double tv = 0, total = 0;
      for (int i = 0; i < v; ++i) {
        tv += 0.5 * std::abs(p_tilde[i] - p[i]);
        total += p_tilde[i];
      }
      QVERIFY2(tv <= delta + 1e-6, qPrintable(QString("TV %1 > delta %2").arg(tv).arg(delta)));
      QVERIFY(std::abs(tv - pool.pooled) < 1e-5);
      QVERIFY(std::abs(total - 1.0) < 1e-5);
      // Neighbours are taken nearest first, with no gaps.
      for (std::size_t j = 0; j < pool.neighbours.size(); ++j) QCOMPARE(pool.neighbours[j], geometry.nearest(x)[j]);
    }
  }

  void mulo_pools_the_token_and_its_k_nearest_codes() {
    const std::vector<float> p = {0.02f, 0.10f, 0.30f, 0.05f, 0.53f};
    const int nearest[] = {3, 0, 4, 1};  // code 2's neighbours, nearest first
    QVERIFY(std::abs(neighbourhood_probability(p, 2, nearest, 0) - 0.30) < 1e-6);  // k = 0: the token alone
    QVERIFY(std::abs(neighbourhood_probability(p, 2, nearest, 2) - (0.30 + 0.05 + 0.02)) < 1e-6);
    QVERIFY(std::abs(neighbourhood_probability(p, 2, nearest, 4) - 1.0) < 1e-6);
  }

  // A 4-row x 6-column image; the block is rows 2..3 (rasters 12..23) unless said otherwise.
  void mulo_expansion_stays_inside_the_block() {
    using Cells = std::vector<Cell>;
    // A corner seed: its 3x3 neighbourhood clipped by the image's left edge and by the block's first row.
    QCOMPARE(expand_region({{2, 0}}, 1, 6, 12, 24), (Cells{{2, 0}, {2, 1}, {3, 0}, {3, 1}}));
    // The right edge, radius 0 (the seed alone), and radius 2 reaching back only into the block.
    QCOMPARE(expand_region({{3, 5}}, 0, 6, 12, 24), (Cells{{3, 5}}));
    QCOMPARE(expand_region({{3, 5}}, 2, 6, 12, 24), (Cells{{2, 3}, {2, 4}, {2, 5}, {3, 3}, {3, 4}, {3, 5}}));
    // Overlapping neighbourhoods are listed once, in raster order.
    QCOMPARE(expand_region({{2, 1}, {2, 2}}, 1, 6, 12, 24), (Cells{{2, 0}, {2, 1}, {2, 2}, {2, 3}, {3, 0}, {3, 1}, {3, 2}, {3, 3}}));
    // The first block starts at raster 1 (the target drew cell 0): it is never reopened.
    QCOMPARE(expand_region({{0, 1}}, 1, 6, 1, 12), (Cells{{0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
  }

  void mulo_islands_are_8_connected_components() {
    using Cells = std::vector<Cell>;
    // Diagonal contact joins; a gap of one column separates; islands ordered by their first cell.
    const auto islands = islands_8connected({{3, 4}, {2, 0}, {3, 1}, {2, 5}, {2, 3}});
    QCOMPARE(islands.size(), std::size_t(2));
    QCOMPARE(islands[0], (Cells{{2, 0}, {3, 1}}));
    QCOMPARE(islands[1], (Cells{{2, 3}, {2, 5}, {3, 4}}));  // (2,3)-(3,4)-(2,5) through diagonals
    // Two seeds' expansions that touch merge into one island.
    QCOMPARE(islands_8connected(expand_region({{2, 0}, {2, 3}}, 1, 6, 12, 24)).size(), std::size_t(1));  // cols 0-1 and 2-4
    QCOMPARE(islands_8connected(expand_region({{2, 0}, {2, 4}}, 1, 6, 12, 24)).size(), std::size_t(2));  // cols 0-1 and 3-5
    QCOMPARE(islands_8connected(expand_region({{2, 0}, {3, 1}}, 0, 6, 12, 24)).size(), std::size_t(1));  // seeds alone, diagonal
    QVERIFY(islands_8connected({}).empty());
  }

  void codebook_neighbours_are_sorted_by_distance() {
    const at::Tensor codes = at::tensor({0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 3.0f, 5.0f, 5.0f}, at::kFloat).reshape({4, 2});
    const CodebookGeometry g(codes, 10);
    QCOMPARE(g.neighbours(), 3);
    QCOMPARE(std::vector<int>(g.nearest(0), g.nearest(0) + 3), (std::vector<int>{1, 2, 3}));
    QCOMPARE(std::vector<int>(g.nearest(2), g.nearest(2) + 3), (std::vector<int>{0, 1, 3}));  // 3 < sqrt(10) < sqrt(29)
  }

  void lisa_soft_rule_on_hand_made_cases() {
    // Codes on a line: 0 at 0, 1 at 0.1, 2 at 3; whitening by std keeps their order.
    const CodebookGeometry g(at::tensor({0.0f, 0.1f, 3.0f, 3.1f}, at::kFloat).reshape({4, 1}), 3);
    SoftVerificationBounds b{1.0, 1.0, 0.5, 2.0, 0.9, 0};
    // Unconfident target (mode 0 at 0.4): draft 1 is geometrically next to the mode: accepted softly.
    const Probabilities flat = probabilities({0.4f, 0.3f, 0.2f, 0.1f});
    SoftScore s = lisa_soft_score(flat, 1, g.whitened(), b, 10);
    QVERIFY(s.accept);
    QVERIFY(std::abs(s.delta - std::log(0.4 / 0.3)) < 1e-6);
    QVERIFY(s.score >= 0);
    // Far in the codebook and with a large confidence gap: rejected (u over the bound).
    s = lisa_soft_score(flat, 3, g.whitened(), b, 10);
    QVERIFY(!s.accept);
    QVERIFY(s.score < 0);
    // A confident target (0.95 > confidence_max) is never relaxed, however close the draft.
    QVERIFY(!lisa_soft_score(probabilities({0.95f, 0.03f, 0.01f, 0.01f}), 1, g.whitened(), b, 10).accept);
    // The gap must stay under delta_max, and within the step's remaining budget.
    b.delta_max = 0.1;
    QVERIFY(!lisa_soft_score(flat, 1, g.whitened(), b, 10).accept);
    b.delta_max = 2.0;
    QVERIFY(!lisa_soft_score(flat, 1, g.whitened(), b, 0.1).accept);
    // A token outside the target's support is never accepted.
    QVERIFY(!lisa_soft_score(probabilities({0.5f, 0.0f, 0.3f, 0.2f}), 1, g.whitened(), b, 10).accept);
  }

  void tree_mask_and_positions_follow_ancestors() {
    DraftTree t;
    const int a = t.add(5, -1, 0.5f, std::log(0.5));
    const int b = t.add(6, -1, 0.3f, std::log(0.3));
    const int c = t.add(7, a, 0.9f, std::log(0.45));
    const int d = t.add(8, c, 0.5f, std::log(0.225));
    QCOMPARE(t.children(-1), (std::vector<int>{a, b}));
    QCOMPARE(t.path_to(d), (std::vector<int>{a, c, d}));
    QCOMPARE(t.max_depth(), 3);
    QCOMPARE(t.positions(10), (std::vector<std::int64_t>{10, 11, 11, 12, 13}));
    const at::Tensor mask = t.attend_mask();
    // Naive ancestor walk: node i (row i + 1) sees the root, itself and its ancestors only.
    for (int i = 0; i < t.size(); ++i) {
      std::vector<int> visible = {0};
      for (int n : t.path_to(i)) visible.push_back(n + 1);
      for (int j = 0; j < t.size() + 1; ++j)
        QCOMPARE(mask[i + 1][j].item<bool>(), std::find(visible.begin(), visible.end(), j) != visible.end());
    }
    QCOMPARE(mask[0].sum().item<int>(), 1);
  }

  void best_nodes_stay_a_tree() {
    DraftTree t;
    const int a = t.add(1, -1, 0.6f, std::log(0.6));
    t.add(2, -1, 0.4f, std::log(0.4));
    const int c = t.add(3, a, 1.0f, std::log(0.6));  // ties its parent
    t.add(4, c, 0.2f, std::log(0.12));
    const DraftTree best = t.best(2);
    QCOMPARE(best.size(), 2);
    QCOMPARE(best.node(0).token, 1);
    QCOMPARE(best.node(1).token, 3);
    QCOMPARE(best.node(1).parent, 0);
    QCOMPARE(best.node(1).depth, 2);
  }
};

QTEST_GUILESS_MAIN(TestAcceptance)
#include "test_acceptance.moc"
