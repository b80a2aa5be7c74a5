// Visualizer layers paint the expected colours at the expected cells for a hand-made grid state.
#include <cmath>

#include "draft_tree_layout.h"
#include "frontier_layer.h"
#include "heat_map_layers.h"
#include "islands_layer.h"
#include "overlay_layers.h"
#include "test_helpers.h"
#include "token_state_layer.h"
#include "trace/grid_state.h"

using namespace speculum;

class TestVisualizers : public QObject {
  Q_OBJECT

  static GridState hand_made() {
    GridState grid;
    grid.apply(RunBegin{"test", "{}", 2, 3, 16});
    grid.apply(Draft{0, 0, "tree", {{0, 0}, {0, 1}, {0, 2}, {1, 0}}, {1, 2, 3, 4}, {0.5f, 0.5f, 0.5f, 0.5f}, {}, {}});
    grid.apply(Verify{0, 0, {{0, 0}, {0, 1}, {0, 2}}, {1, 2, 3}, {}, {}, {}, {}, {},
                      {Decision::StrictAccept, Decision::SoftAccept, Decision::Reject}});
    grid.apply(Resample{0, 0, "residual", {{1, 1}}, {-1}, {7}, {0.2f}});
    grid.apply(Commit{0, {{1, 2}}, {9}, {0.9f}, 0, 1});
    return grid;  // (0,0) accepted, (0,1) soft, (0,2) rejected, (1,0) drafted, (1,1) resampled, (1,2) committed
  }

 private Q_SLOTS:
  void token_state_layer_colours_each_cell() {
    const int px = 4;
    const QImage image = vis::paint_token_state_layer(hand_made(), px);
    QCOMPARE(image.size(), QSize(3 * px, 2 * px));
    auto at = [&](int r, int c) { return image.pixelColor(c * px + px / 2, r * px + px / 2); };
    QCOMPARE(at(0, 0), vis::state_color(CellState::Accepted));
    QCOMPARE(at(0, 1), vis::state_color(CellState::SoftAccepted));
    QCOMPARE(at(0, 2), vis::state_color(CellState::Rejected));
    QCOMPARE(at(1, 0), vis::state_color(CellState::Drafted));
    QCOMPARE(at(1, 1), vis::state_color(CellState::Resampled));
    QCOMPARE(at(1, 2).alpha(), 0);  // committed cells are left clear
    // Cell borders belong to their own cell: no bleeding into the neighbour.
    QCOMPARE(image.pixelColor(px - 1, 0), vis::state_color(CellState::Accepted));
    QCOMPARE(image.pixelColor(px, 0), vis::state_color(CellState::SoftAccepted));
  }

  void state_colours_are_distinct() {
    const CellState states[] = {CellState::Drafted, CellState::Accepted, CellState::SoftAccepted, CellState::Rejected,
                                CellState::Resampled};
    for (auto a : states)
      for (auto b : states)
        if (a != b) QVERIFY(vis::state_color(a).rgb() != vis::state_color(b).rgb());
  }

  void pending_mask_darkens_only_uncommitted_cells() {
    const QImage mask = vis::paint_pending_mask(hand_made(), 2);
    QCOMPARE(mask.pixelColor(5, 3).alpha(), 0);  // (1, 2) committed
    QVERIFY(mask.pixelColor(0, 0).alpha() > 150);
    QVERIFY(mask.pixelColor(2, 2).alpha() > 150);
  }

  void heat_ramp_runs_from_viridis_purple_to_yellow() {
    QCOMPARE(vis::heat_color(0), QColor(68, 1, 84));
    QCOMPARE(vis::heat_color(1), QColor(253, 231, 37));
    QCOMPARE(vis::heat_color(-3), vis::heat_color(0));  // clamped
    QCOMPARE(vis::heat_color(std::nan("")), vis::heat_color(0));
    // Monotone luma, so the order reads without colour vision.
    for (int i = 0; i < 10; ++i) QVERIFY(qGray(vis::heat_color(i / 10.0).rgb()) < qGray(vis::heat_color((i + 1) / 10.0).rgb()));
  }

  void commit_step_layer_colours_committed_cells_by_step() {
    GridState grid;
    grid.apply(RunBegin{"test", "{}", 2, 2, 16});
    grid.apply(Commit{0, {{0, 0}}, {1}, {}, 0, 1});
    grid.apply(Commit{2, {{1, 1}}, {2}, {}, 1, 2});
    grid.apply(Commit{4, {{0, 1}}, {3}, {}, 2, 3});
    const QImage image = vis::paint_commit_step_layer(grid, 3, 4, 200);
    auto at = [&](int r, int c) { return image.pixelColor(c * 3 + 1, r * 3 + 1); };
    QColor first = vis::heat_color(0), middle = vis::heat_color(0.5), last = vis::heat_color(1);
    first.setAlpha(200), middle.setAlpha(200), last.setAlpha(200);
    QCOMPARE(at(0, 0), first);
    QCOMPARE(at(1, 1), middle);
    QCOMPARE(at(0, 1), last);
    QCOMPARE(at(1, 0).alpha(), 0);  // not committed
  }

  void acceptance_layer_colours_verified_cells_by_rate() {
    GridState grid = hand_made();
    // (0, 0) verified again and rejected: 1 of 2 accepted.
    grid.apply(Verify{1, 0, {{0, 0}}, {1}, {}, {}, {}, {}, {}, {Decision::Reject}});
    const QImage image = vis::paint_acceptance_layer(grid, 2, 255);
    auto at = [&](int r, int c) { return image.pixelColor(c * 2, r * 2); };
    QCOMPARE(at(0, 0), vis::heat_color(0.5));
    QCOMPARE(at(0, 1), vis::heat_color(1));  // soft accept counts as accepted
    QCOMPARE(at(0, 2), vis::heat_color(0));
    QCOMPARE(at(1, 0).alpha(), 0);  // drafted, never verified
    QCOMPARE(at(1, 2).alpha(), 0);  // committed without verification (ar)
  }

  void grid_lines_fall_on_cell_boundaries() {
    const QImage lines = vis::paint_grid_lines(2, 4, QSize(40, 20), Qt::white);
    QCOMPARE(lines.pixelColor(10, 5), QColor(Qt::white));  // between columns 0 and 1
    QCOMPARE(lines.pixelColor(5, 10), QColor(Qt::white));  // between rows 0 and 1
    QCOMPARE(lines.pixelColor(5, 5).alpha(), 0);          // inside a cell
    QCOMPARE(lines.pixelColor(0, 0).alpha(), 0);          // no border line
  }

  void origin_layer_keeps_how_tokens_were_decided_after_the_commit() {
    GridState grid = hand_made();
    // Everything is committed: the token-state layer goes clear, the origin layer keeps the decisions.
    grid.apply(Resample{1, 0, "target", {{1, 0}}, {-1}, {5}, {0.3f}});
    grid.apply(Commit{1, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}}, {1, 2, 8, 5, 7}, {}, 0, 5});
    const int px = 2;
    const QImage image = vis::paint_origin_layer(grid, px);
    auto at = [&](int r, int c) { return image.pixelColor(c * px, r * px); };
    QCOMPARE(at(0, 0), vis::origin_color(CellOrigin::StrictAccept));
    QCOMPARE(at(0, 1), vis::origin_color(CellOrigin::SoftAccept));
    QCOMPARE(at(1, 0), vis::origin_color(CellOrigin::Target));
    QCOMPARE(at(1, 1), vis::origin_color(CellOrigin::Residual));
    QCOMPARE(at(0, 2).alpha(), 0);  // rejected, then committed without a resample event: unknown
    QCOMPARE(at(1, 2).alpha(), 0);  // committed without verification (ar)
    QVERIFY(vis::origin_color(CellOrigin::SoftAccept) != vis::origin_color(CellOrigin::StrictAccept));
    QCOMPARE(vis::paint_token_state_layer(grid, px).pixelColor(0, 0).alpha(), 0);
  }

  void soft_score_and_pooled_mass_layers_map_their_values() {
    GridState grid;
    grid.apply(RunBegin{"test", "{}", 1, 3, 16});
    Verify v{0, 0, {{0, 0}, {0, 1}}, {1, 2}, {0.1f, 0.2f}, {1, 1}, {0.1f, 0.2f}, {0.5f, 0.5f}, {0.4f, 0.2f},
             {Decision::SoftAccept, Decision::Reject}, {0, 1}, {0.5f, 2.0f}, {0.1f, 3.0f}, {1.0f, -1.0f}};
    grid.apply(v);
    const QImage soft = vis::paint_soft_score_layer(grid, 1, 255);
    QCOMPARE(soft.pixelColor(0, 0), vis::heat_color(1.0));   // score 1: at the mode
    QCOMPARE(soft.pixelColor(1, 0), vis::heat_color(0.0));   // score -1: far outside
    QCOMPARE(soft.pixelColor(2, 0).alpha(), 0);              // never asked
    const QImage pooled = vis::paint_pooled_mass_layer(grid, 1, 255);
    QCOMPARE(pooled.pixelColor(0, 0), vis::heat_color(0.75));  // p̃ 0.4 of which 0.3 pooled
    QCOMPARE(pooled.pixelColor(1, 0), vis::heat_color(0.0));   // p̃ = p
  }

  void target_p_layer_maps_the_committed_tokens_probability_on_a_log_scale() {
    GridState grid;
    grid.apply(RunBegin{"test", "{}", 1, 4, 16});
    grid.apply(Commit{0, {{0, 0}, {0, 1}, {0, 2}}, {5, 6, 7}, {1.0f, 0.001f, 0.03f}, 0, 3});
    const QImage layer = vis::paint_target_p_layer(grid, 1, 255);
    QCOMPARE(layer.pixelColor(0, 0), vis::heat_color(1.0));  // p = 1: sharp
    QCOMPARE(layer.pixelColor(1, 0), vis::heat_color(0.0));  // p = 0.001: flat
    QVERIFY(std::abs(vis::target_p_position(0.03) - (1 + std::log10(0.03) / 3)) < 1e-12);
    QCOMPARE(layer.pixelColor(2, 0), vis::heat_color(vis::target_p_position(0.03)));
    QCOMPARE(layer.pixelColor(3, 0).alpha(), 0);  // not committed: p unknown
    QCOMPARE(vis::layer_key(vis::Layer::TargetP), QString("p_of_token"));
  }

  // The entropy layer maps 0 .. ln V onto the ramp; the cell keeps the judging row's top candidates and the
  // draft it rejected; a Commit whose lists do not fit its cells is refused, naming the step.
  void entropy_layer_and_top_candidates_follow_the_commit() {
    GridState grid;
    grid.apply(RunBegin{"test", "{}", 1, 3, 16});
    grid.apply(Draft{0, 0, "tree", {{0, 1}, {0, 1}}, {9, 11}, {0.7f, 0.2f}, {-1, -1}, {1, 1}});
    grid.apply(Verify{0, 0, {{0, 1}}, {9}, {0.1f}, {0.7f}, {0.14f}, {0.5f}, {}, {Decision::Reject}});  // 11 never tried
    grid.apply(Commit{0, {{0, 0}, {0, 1}}, {5, 6}, {1.0f, 0.2f}, 0, 2, {0.0f, std::log(16.0f) / 2},
                      {5, -1, -1, -1, -1, 6, 2, 9, 1, 0}, {1.0f, 0, 0, 0, 0, 0.4f, 0.3f, 0.1f, 0.1f, 0.05f}});
    const QImage layer = vis::paint_entropy_layer(grid, 1, 255);
    QCOMPARE(layer.pixelColor(0, 0), vis::heat_color(0.0));
    QCOMPARE(layer.pixelColor(1, 0), vis::heat_color(0.5));
    QCOMPARE(layer.pixelColor(2, 0).alpha(), 0);  // not committed
    QCOMPARE(grid.at(0, 0).top_count, 1);         // a padded list stops at the first -1
    QCOMPARE(grid.at(0, 1).top_count, kTopCandidates);
    QCOMPARE(grid.at(0, 1).top_tokens[2], 9);
    QCOMPARE(grid.at(0, 1).top_p[1], 0.3f);
    QCOMPARE(grid.at(0, 1).draft_token, 9);
    QCOMPARE(grid.at(0, 1).draft_q, 0.7f);
    QVERIFY(vis::layer_legend(vis::Layer::Entropy, 0).size() == 3);
    EXPECT_ERROR(grid.apply(Commit{3, {{0, 2}}, {1}, {0.5f}, 2, 3, {0.1f}, {1, 2}, {0.5f, 0.2f}}),
                 "commit at step 3: entropy, top_tokens and top_p must hold 1, 5 and 5 values per cell");
  }

  void ssd_frontier_and_rounds_layers_follow_the_latest_frontier() {
    // Row 0 committed; row 1 drafted by the vertical head from row 0 at step 4, verified twice at (1, 2).
    GridState grid;
    grid.apply(RunBegin{"test", "{}", 2, 3, 16});
    grid.apply(Frontier{2, {{0, 1}, {0, 2}}});
    grid.apply(Frontier{4, {{1, 0}, {1, 1}, {1, 2}}});
    grid.apply(Draft{4, 0, "v_head(1)", {{1, 0}, {1, 1}, {1, 2}}, {1, 2, 3}, {0.5f, 0.5f, 0.5f}, {}, {}});
    grid.apply(Verify{4, 0, {{1, 0}, {1, 1}, {1, 2}}, {1, 2, 3}, {}, {}, {}, {}, {},
                      {Decision::StrictAccept, Decision::Reject, Decision::StrictAccept}});
    grid.apply(Verify{5, 1, {{1, 2}}, {3}, {}, {}, {}, {}, {}, {Decision::StrictAccept}});
    QCOMPARE(grid.frontier_step(), 4);
    QCOMPARE(grid.at(1, 2).drafted_from, (Cell{0, 2}));
    QCOMPARE(grid.at(0, 1).drafted_from.row, -1);  // never drafted by a head
    const QImage frontier = vis::paint_frontier_layer(grid, QSize(60, 40));
    const auto near = [](QColor a, QColor b) {
      return std::abs(a.red() - b.red()) <= 2 && std::abs(a.green() - b.green()) <= 2 && std::abs(a.blue() - b.blue()) <= 2 &&
             std::abs(a.alpha() - b.alpha()) <= 2;
    };
    QVERIFY(near(frontier.pixelColor(10, 38), vis::kFrontierColor));  // (1, 0)'s edge on the block's outline
    QVERIFY(near(frontier.pixelColor(5, 28), vis::kFrontierFill));    // its inside, away from the arrow
    QCOMPARE(frontier.pixelColor(25, 5).alpha(), 0);                // (0, 1): an older frontier, beside the arrow
    const QColor arrow = frontier.pixelColor(30, 15);               // the arrow from (0, 1) down to (1, 1)
    QVERIFY(arrow.alpha() > 100 && arrow.red() < 60 && arrow.green() > 150 && arrow.blue() > 200);
    const QImage rounds = vis::paint_rounds_layer(grid, 1, 4, 255);
    QCOMPARE(rounds.pixelColor(0, 1), vis::heat_color(0));        // verified once
    QCOMPARE(rounds.pixelColor(2, 1), vis::heat_color(1.0 / 3));  // twice
    QCOMPARE(rounds.pixelColor(0, 0).alpha(), 0);                 // never verified
  }

  void mulo_islands_layer_and_low_res_inset() {
    // A 4x4 grid from a 2x2 low-resolution one; the block of rows 0-1 was up-sampled at step 1; (0, 2) was a
    // rejected seed, its expansion island 1 was redrawn, (0, 3) in pass 2.
    GridState grid;
    grid.apply(RunBegin{"mulo", "{}", 4, 4, 16, 2, 2});
    grid.apply(Draft{1, 0, "low_res", {{0, 0}, {0, 1}}, {3, 4}, {0.5f, 0.5f}, {}, {}});
    std::vector<Cell> block;
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 4; ++c) block.push_back({r, c});
    grid.apply(Draft{1, 0, "upsampler", block, std::vector<int>(8, 1), {}, {}, {}});
    grid.apply(Region{1, "rejected_seed", -1, 0, {{0, 2}}});
    grid.apply(Region{1, "expansion", -1, 1, {{0, 2}, {0, 3}, {1, 2}, {1, 3}}});
    grid.apply(Region{1, "island", 1, 1, {{0, 2}, {0, 3}, {1, 2}, {1, 3}}});
    grid.apply(Resample{2, 1, "target", {{0, 3}}, {1}, {2}, {0.5f}});
    const QImage islands = vis::paint_islands_layer(grid, QSize(80, 80));  // 20 px per cell
    const auto near = [](QColor a, QColor b, int tolerance) {
      return std::abs(a.red() - b.red()) <= tolerance && std::abs(a.green() - b.green()) <= tolerance &&
             std::abs(a.blue() - b.blue()) <= tolerance;
    };
    QVERIFY(near(islands.pixelColor(70, 25), vis::island_color(1), 3));  // (1, 3): island 1's fill
    QCOMPARE(islands.pixelColor(30, 25).alpha(), 0);                     // (1, 1): accepted, outside every region
    QVERIFY(near(islands.pixelColor(46, 6), vis::kSeedColor, 40));      // the cross over the seed (0, 2)
    QVERIFY(near(islands.pixelColor(1, 20), vis::kUpsampledBlockColor, 40));  // the 2x2 blocks' boxes, left edge
    QCOMPARE(islands.pixelColor(10, 60).alpha(), 0);                     // rows 2-3: not up-sampled yet
    // The inset: the low-resolution picture in the top-right third, the drafted row outlined.
    QImage low_res(2, 2, QImage::Format_RGB32);
    low_res.fill(QColor(0, 200, 0));
    QImage frame(300, 300, QImage::Format_RGB32);
    frame.fill(Qt::black);
    QPainter painter(&frame);
    vis::paint_low_res_inset(painter, frame.rect(), low_res, grid);
    painter.end();
    QCOMPARE(frame.pixelColor(250, 80), QColor(0, 200, 0));  // inside the inset, below the outlined row
    QCOMPARE(frame.pixelColor(100, 100), QColor(Qt::black));  // outside it
    QVERIFY(near(frame.pixelColor(250, 5), vis::kLowResDraftColor, 10));  // the drafted row's outline
  }

  void draft_tree_rows_follow_depth_first_order() {
    // root -> a (0) -> c (2); root -> b (1); d (3) names a node of another event (9): not reachable, row 0.
    Draft draft{0, 0, "eagle", {{0, 0}, {0, 0}, {0, 1}, {0, 1}}, {10, 11, 12, 13}, {0.9f, 0.1f, 0.5f, 0.5f}, {-1, -1, 0, 9},
                {1, 1, 2, 2}};
    const std::vector<Event> step = {StepBegin{}, draft,
                                     Verify{0, 0, {{0, 0}, {0, 1}}, {10, 12}, {}, {}, {}, {}, {},
                                            {Decision::StrictAccept, Decision::Reject}, {0, 2}},
                                     Resample{0, 0, "residual", {{0, 1}}, {-1}, {7}, {0.2f}}};
    const vis::DraftTreeLayout tree = vis::layout_draft_tree(step);
    QCOMPARE(int(tree.nodes.size()), 4);
    QCOMPARE(tree.nodes[0].row, 0);  // a
    QCOMPARE(tree.nodes[2].row, 0);  // c, a's first child, on a's row
    QCOMPARE(tree.nodes[1].row, 1);  // b, the root's second child, below a's subtree
    QCOMPARE(tree.nodes[3].row, 0);
    QCOMPARE(tree.rows, 2);
    QCOMPARE(tree.depth, 2);
    QCOMPARE(tree.nodes[0].fate, vis::Fate::Accepted);
    QCOMPARE(tree.nodes[2].fate, vis::Fate::Rejected);
    QCOMPARE(tree.nodes[1].fate, vis::Fate::Untried);
    QCOMPARE(tree.bonus_token, 7);
    QCOMPARE(tree.bonus_dist, std::string("residual"));
  }

  void a_chain_as_deep_as_a_trace_allows_is_laid_out() {
    Draft chain;  // 65,536 nodes one under another: recursion per node overflowed the window's stack
    chain.source = "eagle";
    for (int i = 0; i < 1 << 16; ++i) {
      chain.cells.push_back({0, 0});
      chain.tokens.push_back(i % 1024);
      chain.tree_parent.push_back(i - 1);
      chain.tree_depth.push_back(i + 1);
    }
    const vis::DraftTreeLayout tree = vis::layout_draft_tree({chain});
    QCOMPARE(tree.rows, 1);
    QCOMPARE(tree.depth, 1 << 16);
    QCOMPARE(tree.nodes.back().row, 0);
  }

  void every_layer_has_a_name_and_paints_at_the_requested_size() {
    for (vis::Layer layer : vis::kAllLayers) {
      QVERIFY(!vis::layer_name(layer).isEmpty());
      QCOMPARE(vis::paint_layer(layer, hand_made(), QSize(60, 40), 3).size(), QSize(60, 40));
    }
    QCOMPARE(vis::layer_legend(vis::Layer::TokenState, 0).size(), std::size_t(6));
    QCOMPARE(vis::layer_legend(vis::Layer::CommitStep, 255).back().label, QString("step 256"));
  }
};

QTEST_MAIN(TestVisualizers)
#include "test_visualizers.moc"
