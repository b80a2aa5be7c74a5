// Visualizer layers paint the expected colours at the expected cells for a hand-made grid state.
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
};

QTEST_MAIN(TestVisualizers)
#include "test_visualizers.moc"
