// SSD's drafting frontier: the cells drafted in the latest frontier, tinted, each with an arrow from the cell
// whose feature its head read (the committed cell above it, or the last committed cell of row 0). Pure
// function of the grid state, painted at the canvas's pixel size so the arrows stay thin.
#pragma once

#include <QColor>
#include <QImage>
#include <QSize>

#include "trace/grid_state.h"

namespace speculum::vis {

inline const QColor kFrontierColor(255, 140, 0, 150);
inline const QColor kFrontierArrowColor(255, 255, 255, 220);

QImage paint_frontier_layer(const GridState& grid, QSize size);

}  // namespace speculum::vis
