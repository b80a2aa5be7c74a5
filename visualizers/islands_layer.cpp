#include "islands_layer.h"

#include <QFont>
#include <algorithm>

namespace speculum::vis {

QColor island_color(int island) {
  static const QColor palette[] = {QColor(230, 25, 75), QColor(60, 180, 75), QColor(0, 130, 200), QColor(245, 130, 48),
                                   QColor(145, 30, 180), QColor(70, 240, 240), QColor(240, 50, 230), QColor(210, 245, 60)};
  QColor c = palette[static_cast<std::size_t>(island) % std::size(palette)];
  c.setAlpha(140);
  return c;
}

QImage paint_islands_layer(const GridState& grid, QSize size) {
  QImage image(size, QImage::Format_ARGB32);
  image.fill(Qt::transparent);
  if (grid.rows() <= 0 || grid.cols() <= 0) return image;
  const double cw = double(size.width()) / grid.cols(), ch = double(size.height()) / grid.rows();
  const auto rect = [&](int r, int c) { return QRectF(c * cw, r * ch, cw, ch); };
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  QFont font = painter.font();
  font.setPixelSize(std::max(7, static_cast<int>(std::min(cw, ch) * 0.5)));
  font.setBold(true);
  painter.setFont(font);
  const double line = std::max(1.0, std::min(cw, ch) / 12);
  for (int r = 0; r < grid.rows(); ++r)
    for (int c = 0; c < grid.cols(); ++c) {
      const CellInfo& cell = grid.at(r, c);
      if (cell.island >= 0) painter.fillRect(rect(r, c), island_color(cell.island));
      if (cell.expanded) {
        painter.setPen(QPen(kExpansionColor, line));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(rect(r, c).adjusted(line, line, -line, -line));
      }
      if (cell.rejected_seed) {
        painter.setPen(QPen(kSeedColor, 1.5 * line));
        const QRectF x = rect(r, c).adjusted(cw / 4, ch / 4, -cw / 4, -ch / 4);
        painter.drawLine(x.topLeft(), x.bottomRight());
        painter.drawLine(x.topRight(), x.bottomLeft());
      }
      if (cell.resample_pass >= 0) {
        painter.setPen(Qt::white);
        painter.drawText(rect(r, c), Qt::AlignCenter, QString::number(cell.resample_pass + 1));
      }
    }
  // The latest up-sampled block, split into the r×r blocks that each came from one low-resolution cell.
  if (grid.upsampled_step() >= 0 && grid.low_res_rows() > 0) {
    const int factor = std::max(1, grid.rows() / grid.low_res_rows());
    painter.setPen(QPen(kUpsampledBlockColor, line));
    painter.setBrush(Qt::NoBrush);
    for (int r = 0; r < grid.rows(); r += factor)
      for (int c = 0; c < grid.cols(); c += factor) {
        bool in_block = false;
        for (int dr = 0; dr < factor && r + dr < grid.rows(); ++dr)
          for (int dc = 0; dc < factor && c + dc < grid.cols(); ++dc)
            in_block = in_block || grid.at(r + dr, c + dc).upsampled_step == grid.upsampled_step();
        if (in_block) painter.drawRect(QRectF(c * cw, r * ch, factor * cw, factor * ch).adjusted(line / 2, line / 2, -line / 2, -line / 2));
      }
  }
  return image;
}

void paint_low_res_inset(QPainter& painter, const QRect& target, const QImage& low_res, const GridState& grid) {
  if (low_res.isNull() || grid.low_res_rows() <= 0) return;
  const int side = target.width() / 3, margin = std::max(2, target.width() / 60);
  const QRect inset(target.right() - side - margin, target.top() + margin, side, side * target.height() / std::max(1, target.width()));
  painter.save();
  painter.setRenderHint(QPainter::SmoothPixmapTransform, false);
  painter.fillRect(inset.adjusted(-2, -2, 2, 2), Qt::white);
  painter.drawImage(inset, low_res);
  if (grid.low_res_first_drafted() >= 0) {
    const double cw = double(inset.width()) / grid.low_res_cols(), ch = double(inset.height()) / grid.low_res_rows();
    const int row = grid.low_res_first_drafted() / grid.low_res_cols();
    painter.setPen(QPen(kLowResDraftColor, 2));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(QRectF(inset.left(), inset.top() + row * ch, grid.low_res_cols() * cw, ch));
  }
  painter.restore();
}

}  // namespace speculum::vis
