#include "token_state_layer.h"

#include "cell_painter.h"

namespace speculum::vis {

QColor state_color(CellState state) {
  switch (state) {
    case CellState::Drafted: return QColor(86, 180, 233, 150);     // sky blue
    case CellState::Accepted: return QColor(0, 158, 115, 150);     // bluish green
    case CellState::SoftAccepted: return QColor(240, 228, 66, 150);  // yellow
    case CellState::Rejected: return QColor(213, 94, 0, 170);      // vermillion
    case CellState::Resampled: return QColor(204, 121, 167, 170);  // reddish purple
    case CellState::Empty:
    case CellState::Committed: break;
  }
  return QColor(0, 0, 0, 0);
}

const char* state_label(CellState state) {
  switch (state) {
    case CellState::Empty: return "empty";
    case CellState::Drafted: return "drafted";
    case CellState::Accepted: return "accepted";
    case CellState::SoftAccepted: return "soft-accepted";
    case CellState::Rejected: return "rejected";
    case CellState::Resampled: return "resampled";
    case CellState::Committed: return "committed";
  }
  return "";
}

QImage paint_token_state_layer(const GridState& grid, int cell_px) {
  return paint_cells(grid, cell_px, [](const CellInfo& cell) { return state_color(cell.state); });
}

QImage paint_pending_mask(const GridState& grid, int cell_px) {
  return paint_cells(grid, cell_px, [](const CellInfo& cell) {
    return cell.state == CellState::Committed ? QColor(0, 0, 0, 0) : QColor(20, 20, 20, 190);
  });
}

}  // namespace speculum::vis
