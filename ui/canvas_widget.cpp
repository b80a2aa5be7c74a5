#include "canvas_widget.h"

#include <QPainter>

#include "token_state_layer.h"

namespace speculum::ui {

CanvasWidget::CanvasWidget(QWidget* parent) : QWidget(parent) {
  setMinimumSize(256, 256);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void CanvasWidget::set_image(const QImage& image) {
  image_ = image;
  update();
}

void CanvasWidget::set_grid(const GridState& grid) {
  grid_ = grid;
  update();
}

void CanvasWidget::set_grid_lines(bool on) {
  grid_lines_ = on;
  update();
}

QRect CanvasWidget::target_rect() const {
  const int side = std::min(width(), height()) - 16;
  return {(width() - side) / 2, (height() - side) / 2, side, side};
}

void CanvasWidget::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().window());
  const QRect target = target_rect();
  painter.fillRect(target, QColor(40, 40, 40));
  if (!image_.isNull()) painter.drawImage(target, image_);  // default: nearest-neighbour scaling
  if (grid_.rows() > 0) {
    painter.drawImage(target, vis::paint_pending_mask(grid_, 1));
    painter.drawImage(target, vis::paint_token_state_layer(grid_, 1));
    if (grid_lines_) {
      painter.setPen(QColor(255, 255, 255, 60));
      for (int r = 1; r < grid_.rows(); ++r) {
        const int y = target.top() + r * target.height() / grid_.rows();
        painter.drawLine(target.left(), y, target.right(), y);
      }
      for (int c = 1; c < grid_.cols(); ++c) {
        const int x = target.left() + c * target.width() / grid_.cols();
        painter.drawLine(x, target.top(), x, target.bottom());
      }
    }
  }
  painter.setPen(palette().windowText().color());
  painter.drawRect(target.adjusted(0, 0, -1, -1));
}

}  // namespace speculum::ui
