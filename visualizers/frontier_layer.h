// SSD's drafting frontier: the cells drafted in the latest frontier, lightly tinted and outlined as a block (so
// the token-state colours beneath stay readable), each with an arrow from the cell whose feature its head read
// (the committed cell above it, or the last committed cell of row 0). Pure function of the grid state, painted
// at the canvas's pixel size so the lines stay thin.
#pragma once

#include <QColor>
#include <QImage>
#include <QSize>

#include "trace/grid_state.h"

namespace speculum::vis {

inline const QColor kFrontierColor(255, 140, 0);          // the block's outline
inline const QColor kFrontierFill(255, 140, 0, 60);
inline const QColor kFrontierArrowColor(0, 190, 255, 230);  // cyan: visible on light and dark images and on the legend

QImage paint_frontier_layer(const GridState& grid, QSize size);

}  // namespace speculum::vis
