#include "frontier_layer.h"

#include <QLineF>
#include <QPainter>
#include <QPolygonF>
#include <cmath>

namespace speculum::vis {

QImage paint_frontier_layer(const GridState& grid, QSize size) {
  QImage image(size, QImage::Format_ARGB32);
  image.fill(Qt::transparent);
  if (grid.rows() <= 0 || grid.cols() <= 0 || grid.frontier_step() < 0) return image;
  const double cw = double(size.width()) / grid.cols(), ch = double(size.height()) / grid.rows();
  const auto center = [&](const Cell& c) { return QPointF((c.col + 0.5) * cw, (c.row + 0.5) * ch); };
  const auto inside = [&](const Cell& c) { return c.row >= 0 && c.row < grid.rows() && c.col >= 0 && c.col < grid.cols(); };
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  for (int r = 0; r < grid.rows(); ++r)
    for (int c = 0; c < grid.cols(); ++c)
      if (grid.at(r, c).frontier_step == grid.frontier_step()) painter.fillRect(QRectF(c * cw, r * ch, cw, ch), kFrontierColor);
  // Arrows after the tint, from the source cell's centre to a point short of the drafted cell's centre.
  painter.setPen(QPen(kFrontierArrowColor, std::max(1.0, std::min(cw, ch) / 14)));
  painter.setBrush(kFrontierArrowColor);
  const double head = std::min(cw, ch) * 0.22;
  for (int r = 0; r < grid.rows(); ++r)
    for (int c = 0; c < grid.cols(); ++c) {
      const CellInfo& cell = grid.at(r, c);
      if (cell.frontier_step != grid.frontier_step() || !inside(cell.drafted_from)) continue;
      const QPointF from = center(cell.drafted_from), to = center({r, c});
      const QLineF line(from, to);
      if (line.length() < 1) continue;
      const QPointF tip = line.pointAt(1 - 0.3 * std::min(cw, ch) / line.length());
      painter.drawLine(from, tip);
      const double angle = std::atan2(tip.y() - from.y(), tip.x() - from.x());
      painter.drawPolygon(QPolygonF({tip, tip - QPointF(std::cos(angle - 0.5), std::sin(angle - 0.5)) * head,
                                     tip - QPointF(std::cos(angle + 0.5), std::sin(angle + 0.5)) * head}));
    }
  return image;
}

}  // namespace speculum::vis
