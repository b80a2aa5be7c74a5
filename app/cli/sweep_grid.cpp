#include "cli/sweep_grid.h"

#include <QFontMetrics>
#include <QImage>
#include <QPainter>
#include <algorithm>

#include "common/chart_canvas.h"
#include "common/offscreen_gui.h"
#include "common/png_export.h"

namespace speculum::cli {

void write_sweep_grid(const std::string& method, const std::vector<SweepAxis>& axes, const std::vector<Image>& images,
                      const std::string& caption, const std::string& path) {
  app::OffscreenGui gui;
  const int cols = static_cast<int>(axes[0].values.size());
  const int rows = axes.size() > 1 ? static_cast<int>(axes[1].values.size()) : 1;
  const int cell = 148, pad = 6, header = 22, title = 30, label_width = axes.size() > 1 ? 96 : 0;
  const int reference_width = cell + 2 * pad + 12;
  const QString heading = QString::fromStdString(method + ": " + caption);
  const int title_width = QFontMetrics(app::chart_font(12, true)).horizontalAdvance(heading) + 24;
  const int width = std::max(reference_width + label_width + cols * (cell + pad) + pad, title_width);
  const int height = title + header + rows * (cell + pad) + pad + 18;
  QImage sheet = app::white_canvas(width, height);
  QPainter p(&sheet);
  p.setRenderHint(QPainter::SmoothPixmapTransform);
  p.setFont(app::chart_font(12, true));
  p.drawText(QRect(0, 6, width, 20), Qt::AlignCenter, heading);
  p.setFont(app::chart_font());
  const auto draw = [&](const Image& image, int x, int y) {
    const QImage q(image.rgb.data(), image.width, image.height, image.width * 3, QImage::Format_RGB888);
    p.drawImage(QRect(x, y, cell, cell), q);
  };
  // ar, the reference, at the left.
  p.drawText(QRect(pad, title, cell, header), Qt::AlignCenter, "ar (reference)");
  draw(images[0], pad, title + header);
  p.setPen(QColor(180, 180, 180));
  p.drawLine(reference_width - 6, title, reference_width - 6, height - 6);
  p.setPen(Qt::black);
  const int x0 = reference_width + label_width;
  for (int c = 0; c < cols; ++c)
    p.drawText(QRect(x0 + c * (cell + pad), title, cell, header), Qt::AlignCenter,
               QString::fromStdString(axes[0].name) + " = " + QString::number(axes[0].values[static_cast<std::size_t>(c)]));
  for (int r = 0; r < rows; ++r) {
    const int y = title + header + r * (cell + pad);
    if (axes.size() > 1)
      p.drawText(QRect(reference_width, y, label_width - 6, cell), Qt::AlignRight | Qt::AlignVCenter,
                 QString::fromStdString(axes[1].name) + " = " + QString::number(axes[1].values[static_cast<std::size_t>(r)]));
    for (int c = 0; c < cols; ++c) draw(images[1 + static_cast<std::size_t>(c * rows + r)], x0 + c * (cell + pad), y);
  }
  p.end();
  app::write_png(path, sheet, {});
}

}  // namespace speculum::cli
