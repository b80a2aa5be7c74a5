// Shared by the layers: fill each cell of a grid-sized image with the colour a function picks.
#pragma once

#include <QImage>
#include <QPainter>

#include "trace/grid_state.h"

namespace speculum::vis {

template <typename ColorOf>
QImage paint_cells(const GridState& grid, int cell_px, ColorOf color_of) {
  QImage image(grid.cols() * cell_px, grid.rows() * cell_px, QImage::Format_ARGB32);
  image.fill(Qt::transparent);
  QPainter painter(&image);
  painter.setCompositionMode(QPainter::CompositionMode_Source);  // exact colours, no blending
  for (int r = 0; r < grid.rows(); ++r)
    for (int c = 0; c < grid.cols(); ++c)
      if (const QColor color = color_of(grid.at(r, c)); color.alpha() > 0)
        painter.fillRect(c * cell_px, r * cell_px, cell_px, cell_px, color);
  return image;
}

}  // namespace speculum::vis
