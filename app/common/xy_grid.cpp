#include "common/xy_grid.h"

#include <QFontMetrics>
#include <QPainter>
#include <algorithm>

#include "common/chart_canvas.h"

namespace speculum::app {

QImage render_xy_grid(const XyGrid& grid) {
  const int cols = static_cast<int>(grid.x_values.size());
  const int rows = grid.y_name.isEmpty() ? 1 : static_cast<int>(grid.y_values.size());
  const int cell = 148, pad = 6, header = 22, title = 30, note = grid.notes.isEmpty() ? 0 : 16;
  const int label_width = grid.y_name.isEmpty() ? 0 : 110;
  const int reference_width = grid.reference.isNull() ? 0 : cell + 2 * pad + 12;
  const int title_width = QFontMetrics(chart_font(12, true)).horizontalAdvance(grid.title) + 24;
  const int width = std::max(reference_width + label_width + cols * (cell + pad) + pad, title_width);
  const int height = title + header + rows * (cell + note + pad) + pad + 18;
  QImage sheet = white_canvas(width, height);
  QPainter p(&sheet);
  p.setFont(chart_font(12, true));
  p.drawText(QRect(0, 6, width, 20), Qt::AlignCenter, grid.title);
  p.setFont(chart_font());
  // Nearest neighbour: each token's patch stays a sharp block.
  const auto draw = [&](const QImage& image, int x, int y) { p.drawImage(QRect(x, y, cell, cell), image); };
  if (!grid.reference.isNull()) {
    p.drawText(QRect(pad, title, cell, header), Qt::AlignCenter, grid.reference_label);
    draw(grid.reference, pad, title + header);
    p.setPen(QColor(180, 180, 180));
    p.drawLine(reference_width - 6, title, reference_width - 6, height - 6);
    p.setPen(Qt::black);
  }
  const int x0 = reference_width + label_width;
  for (int c = 0; c < cols; ++c)
    p.drawText(QRect(x0 + c * (cell + pad), title, cell, header), Qt::AlignCenter, grid.x_name + " = " + grid.x_values[c]);
  for (int r = 0; r < rows; ++r) {
    const int y = title + header + r * (cell + note + pad);
    if (!grid.y_name.isEmpty())
      p.drawText(QRect(reference_width, y, label_width - 6, cell), Qt::AlignRight | Qt::AlignVCenter, grid.y_name + " = " + grid.y_values[r]);
    for (int c = 0; c < cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r * cols + c);
      if (i < grid.images.size()) draw(grid.images[i], x0 + c * (cell + pad), y);
      if (static_cast<int>(i) < grid.notes.size())
        p.drawText(QRect(x0 + c * (cell + pad), y + cell, cell, note), Qt::AlignCenter, grid.notes[static_cast<int>(i)]);
    }
  }
  return sheet;
}

}  // namespace speculum::app
