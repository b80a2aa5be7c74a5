// Folds the event stream into per-cell state: what the canvas, the overlays and the replay show.
#pragma once

#include <vector>

#include "trace/events.h"

namespace speculum {

// EMPTY -> DRAFTED -> (ACCEPTED | SOFT_ACCEPTED | REJECTED -> RESAMPLED) -> COMMITTED
enum class CellState { Empty, Drafted, Accepted, SoftAccepted, Rejected, Resampled, Committed };

// How a cell's latest token came about: the rule that accepted its draft, or the distribution it was drawn
// from. It survives the commit, so a finished run still shows which tokens were accepted softly.
enum class CellOrigin { Unknown, StrictAccept, SoftAccept, Residual, Target };

struct CellInfo {
  CellState state = CellState::Empty;
  int token = -1;         // latest token known for the cell (draft, resample or commit)
  float p = -1;           // processed target probability of `token`, -1 when unknown
  float q = -1;           // draft probability of `token`, -1 when not drafted
  int last_step = -1;     // step of the latest event touching the cell
  int commit_step = -1;   // step that committed the cell
  int times_verified = 0;
  int times_accepted = 0;  // strict or soft
  CellOrigin origin = CellOrigin::Unknown;
  float soft_score = -1e9f;  // LISA: the latest soft-verification score (>= 0 inside the region); -1e9 when never asked
  float pooled_gain = -1;    // LANTERN: the share of p̃ that pooling added, (p̃ − p) / p̃, at the latest verification; -1 when none
  int frontier_step = -1;    // SSD: the step of the latest drafting frontier that held the cell
  Cell drafted_from{-1, -1};  // SSD: the cell whose feature the head that drafted this one read; row -1 when none
};

class GridState {
 public:
  GridState() = default;
  GridState(int rows, int cols);

  void apply(const Event& event);  // RunBegin resets the grid to the run's size

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  const CellInfo& at(int row, int col) const { return cells_[index(row, col)]; }
  int committed_count() const { return committed_; }
  int last_step() const { return last_step_; }
  int frontier_step() const { return frontier_step_; }  // the latest Frontier event's step, -1 before any
  std::vector<int> committed_tokens() const;  // raster order, -1 where not committed

 private:
  int index(int row, int col) const { return row * cols_ + col; }
  CellInfo* cell(const Cell& c);

  int rows_ = 0;
  int cols_ = 0;
  int committed_ = 0;
  int last_step_ = -1;
  int frontier_step_ = -1;
  std::vector<CellInfo> cells_;
};

}  // namespace speculum
