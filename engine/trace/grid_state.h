// Folds the event stream into per-cell state: what the canvas, the overlays and the replay show.
#pragma once

#include <array>
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
  int upsampled_step = -1;    // MuLo-SD: the step whose up-sampled block held the cell
  bool rejected_seed = false;  // MuLo-SD: rejected by the pooled test (a seed of the local region)
  bool expanded = false;       // MuLo-SD: reopened by a seed's neighbourhood (seeds included)
  int island = -1;             // MuLo-SD: its island's id within its block; -1 when none
  int resample_pass = -1;      // MuLo-SD: the pass that redrew it (islands side by side: its position in the island)
  int draft_token = -1;        // the draft verified last for the cell (else drafted last), kept after a rejection; -1 none
  float draft_q = -1;          // its draft probability
  // The target distribution that judged the committed token (from the Commit): entropy in nats (-1 unknown)
  // and its most likely tokens, most likely first (top_count of them; 0 in traces without them).
  float entropy = -1;
  int top_count = 0;
  std::array<int, kTopCandidates> top_tokens{};
  std::array<float, kTopCandidates> top_p{};
};

class GridState {
 public:
  GridState() = default;
  GridState(int rows, int cols);

  void apply(const Event& event);  // RunBegin resets the grid to the run's size

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  int vocab_size() const { return vocab_size_; }  // from RunBegin; 0 before one
  const CellInfo& at(int row, int col) const { return cells_[index(row, col)]; }
  int committed_count() const { return committed_; }
  int last_step() const { return last_step_; }
  int frontier_step() const { return frontier_step_; }  // the latest Frontier event's step, -1 before any
  std::vector<int> committed_tokens() const;  // raster order, -1 where not committed
  // MuLo-SD's low-resolution grid: the drafter's tokens (drafted rows, then the committed rows shrunk back),
  // raster order, -1 where unknown; empty for other methods.
  int low_res_rows() const { return low_res_rows_; }
  int low_res_cols() const { return low_res_cols_; }
  const std::vector<int>& low_res_tokens() const { return low_res_tokens_; }
  int low_res_draft_step() const { return low_res_draft_step_; }  // the latest low-res draft's step, -1 before any
  int low_res_first_drafted() const { return low_res_first_drafted_; }  // its first raster, -1 before any
  int upsampled_step() const { return upsampled_step_; }  // the latest up-sampled block's step, -1 before any

 private:
  int index(int row, int col) const { return row * cols_ + col; }
  CellInfo* cell(const Cell& c);
  void apply_low_res(const Draft& e);

  int rows_ = 0;
  int cols_ = 0;
  int vocab_size_ = 0;
  int committed_ = 0;
  int last_step_ = -1;
  int frontier_step_ = -1;
  std::vector<CellInfo> cells_;
  int low_res_rows_ = 0;
  int low_res_cols_ = 0;
  std::vector<int> low_res_tokens_;
  int low_res_draft_step_ = -1;
  int low_res_first_drafted_ = -1;
  int upsampled_step_ = -1;
};

}  // namespace speculum
