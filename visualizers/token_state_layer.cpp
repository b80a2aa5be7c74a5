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

QColor origin_color(CellOrigin origin) {
  switch (origin) {
    case CellOrigin::StrictAccept: return QColor(0, 158, 115, 150);  // as accepted
    case CellOrigin::SoftAccept: return QColor(240, 228, 66, 170);   // as soft-accepted
    case CellOrigin::Residual: return QColor(204, 121, 167, 170);    // as resampled
    case CellOrigin::Target: return QColor(86, 180, 233, 110);       // a bonus or plain draw
    case CellOrigin::Unknown: break;
  }
  return QColor(0, 0, 0, 0);
}

const char* origin_label(CellOrigin origin) {
  switch (origin) {
    case CellOrigin::StrictAccept: return "draft accepted (exact test)";
    case CellOrigin::SoftAccept: return "draft accepted softly (relaxed test)";
    case CellOrigin::Residual: return "drawn from the residual after a rejection";
    case CellOrigin::Target: return "drawn from the target (bonus)";
    case CellOrigin::Unknown: return "not verified";
  }
  return "";
}

QImage paint_origin_layer(const GridState& grid, int cell_px) {
  return paint_cells(grid, cell_px, [](const CellInfo& cell) { return origin_color(cell.origin); });
}

QImage paint_pending_mask(const GridState& grid, int cell_px) {
  return paint_cells(grid, cell_px, [](const CellInfo& cell) {
    return cell.state == CellState::Committed ? QColor(0, 0, 0, 0) : QColor(20, 20, 20, 190);
  });
}

}  // namespace speculum::vis
