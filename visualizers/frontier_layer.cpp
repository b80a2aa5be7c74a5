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
  const auto in_frontier = [&](int r, int c) {
    return r >= 0 && r < grid.rows() && c >= 0 && c < grid.cols() && grid.at(r, c).frontier_step == grid.frontier_step();
  };
  for (int r = 0; r < grid.rows(); ++r)
    for (int c = 0; c < grid.cols(); ++c)
      if (in_frontier(r, c)) painter.fillRect(QRectF(c * cw, r * ch, cw, ch), kFrontierFill);
  // The block's outline: every frontier cell edge that borders a cell outside the frontier.
  const double inset = std::max(1.0, std::min(cw, ch) / 10);
  painter.setPen(QPen(kFrontierColor, 2 * inset));
  for (int r = 0; r < grid.rows(); ++r)
    for (int c = 0; c < grid.cols(); ++c) {
      if (!in_frontier(r, c)) continue;
      const double x0 = c * cw + inset, x1 = (c + 1) * cw - inset, y0 = r * ch + inset, y1 = (r + 1) * ch - inset;
      if (!in_frontier(r - 1, c)) painter.drawLine(QPointF(c * cw, y0), QPointF((c + 1) * cw, y0));
      if (!in_frontier(r + 1, c)) painter.drawLine(QPointF(c * cw, y1), QPointF((c + 1) * cw, y1));
      if (!in_frontier(r, c - 1)) painter.drawLine(QPointF(x0, r * ch), QPointF(x0, (r + 1) * ch));
      if (!in_frontier(r, c + 1)) painter.drawLine(QPointF(x1, r * ch), QPointF(x1, (r + 1) * ch));
    }
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
