#include "frame_composer.h"

#include <QPainter>

#include "islands_layer.h"
#include "token_state_layer.h"

namespace speculum::vis {

void paint_frame(QPainter& painter, const QRect& target, const QImage& image, const GridState& grid, const FrameStyle& style,
                 const QImage& low_res) {
  painter.save();
  painter.fillRect(target, QColor(40, 40, 40));
  painter.setRenderHint(QPainter::SmoothPixmapTransform, style.smooth);
  if (!image.isNull()) painter.drawImage(target, image);
  painter.setRenderHint(QPainter::SmoothPixmapTransform, false);
  if (grid.rows() > 0) {
    if (style.dim_pending) painter.drawImage(target, paint_pending_mask(grid, 1));
    for (Layer layer : kAllLayers)
      if (style.layers.count(layer)) painter.drawImage(target.topLeft(), paint_layer(layer, grid, target.size(), style.last_step));
    if (style.layers.count(Layer::LowRes)) paint_low_res_inset(painter, target, low_res, grid);
  }
  painter.restore();
}

QImage compose_frame(QSize size, const QImage& image, const GridState& grid, const FrameStyle& style, const QImage& low_res) {
  QImage frame(size, QImage::Format_RGB32);
  frame.fill(Qt::black);
  QPainter painter(&frame);
  paint_frame(painter, frame.rect(), image, grid, style, low_res);
  return frame;
}

}  // namespace speculum::vis
