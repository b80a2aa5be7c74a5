// The token-state overlay: one translucent colour per cell state (drafted, accepted, soft-accepted,
// rejected, resampled), nothing over committed or empty cells. A pure function of the grid state, so
// it is tested headless. Colours are the Okabe-Ito palette (colour-blind safe on dark and light).
#pragma once

#include <QColor>
#include <QImage>

#include "trace/grid_state.h"

namespace speculum::vis {

QColor state_color(CellState state);  // transparent for Empty and Committed
const char* state_label(CellState state);

// An ARGB image of grid_cols * cell_px by grid_rows * cell_px pixels.
QImage paint_token_state_layer(const GridState& grid, int cell_px);

// How each cell's token was decided (strict accept, soft accept, residual draw, target draw), kept after
// the commit; cells never verified nor resampled (ar) stay clear.
QColor origin_color(CellOrigin origin);
const char* origin_label(CellOrigin origin);
QImage paint_origin_layer(const GridState& grid, int cell_px);

// Darkens the cells that are not committed yet, so a preview shows which pixels are real.
QImage paint_pending_mask(const GridState& grid, int cell_px);

}  // namespace speculum::vis
