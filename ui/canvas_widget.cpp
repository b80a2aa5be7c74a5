#include "canvas_widget.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>

#include "token_state_layer.h"

namespace speculum::ui {

CanvasWidget::CanvasWidget(QWidget* parent) : QWidget(parent) {
  setMinimumSize(256, 256);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);  // paintEvent fills every pixel: a live frame need not repaint what lies beneath
}

void CanvasWidget::set_low_res_image(const QImage& image) {
  low_res_image_ = image;
  update();
}

void CanvasWidget::set_image(const QImage& image) {
  image_ = image;
  update();
}

void CanvasWidget::set_grid(const GridState& grid) {
  grid_ = grid;
  update();
}

void CanvasWidget::set_style(const vis::FrameStyle& style) {
  style_ = style;
  update();
}

void CanvasWidget::reset_view() {
  zoom_ = 1.0;
  pan_ = {};
  update();
}

QRectF CanvasWidget::target_rect() const {
  const double side = (std::min(width(), height()) - 16) * zoom_;
  const QPointF centre = QPointF(width() / 2.0, height() / 2.0) + pan_;
  return {centre.x() - side / 2, centre.y() - side / 2, side, side};
}

std::optional<Cell> CanvasWidget::cell_at(QPoint position) const {
  const QRectF target = target_rect();
  if (grid_.rows() <= 0 || !target.contains(position)) return std::nullopt;
  const int row = std::clamp(int((position.y() - target.top()) / target.height() * grid_.rows()), 0, grid_.rows() - 1);
  const int col = std::clamp(int((position.x() - target.left()) / target.width() * grid_.cols()), 0, grid_.cols() - 1);
  return Cell{row, col};
}

QString CanvasWidget::describe_cell(const GridState& grid, int row, int col) {
  const CellInfo& cell = grid.at(row, col);
  auto probability = [](float v) { return v < 0 ? QString("—") : QString::number(v, 'f', 3); };
  QString text = QString("row %1, column %2 · %3").arg(row).arg(col).arg(vis::state_label(cell.state));
  if (cell.token >= 0) text += QString(" · token %1").arg(cell.token);
  text += QString(" · p %1 · q %2").arg(probability(cell.p), probability(cell.q));
  if (cell.commit_step >= 0) text += QString(" · committed at step %1").arg(cell.commit_step + 1);
  else if (cell.last_step >= 0) text += QString(" · step %1").arg(cell.last_step + 1);
  if (cell.times_verified > 0) text += QString(" · accepted %1/%2").arg(cell.times_accepted).arg(cell.times_verified);
  if (cell.rejected_seed) text += " · rejected seed";
  else if (cell.expanded) text += " · reopened by a seed's neighbourhood";
  if (cell.island >= 0) text += QString(" · island %1").arg(cell.island);
  if (cell.resample_pass >= 0) text += QString(", redrawn in pass %1").arg(cell.resample_pass + 1);
  if (cell.top_count > 0) {
    text += "\ntarget";
    if (cell.entropy >= 0) text += QString(": entropy %1 nats").arg(cell.entropy, 0, 'f', 2);
    text += " · most likely";
    for (int k = 0; k < cell.top_count; ++k)
      text += QString("%1 %2 (%3)").arg(k ? "," : "").arg(cell.top_tokens[k]).arg(probability(cell.top_p[k]));
  }
  if (cell.draft_token >= 0)
    text += QString("\ndraft: token %1, q %2").arg(cell.draft_token).arg(probability(cell.draft_q));
  return text;
}

void CanvasWidget::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().window());
  const QRect target = target_rect().toAlignedRect();
  vis::paint_frame(painter, target, image_, grid_, style_, low_res_image_);
  painter.setPen(palette().windowText().color());
  painter.drawRect(target.adjusted(0, 0, -1, -1));
}

void CanvasWidget::wheelEvent(QWheelEvent* event) {
  const double factor = std::pow(1.0015, event->angleDelta().y());
  const double new_zoom = std::clamp(zoom_ * factor, 0.25, 32.0);
  // Keep the point under the cursor fixed.
  const QPointF centre = QPointF(width() / 2.0, height() / 2.0) + pan_;
  const QPointF from_centre = event->position() - centre;
  pan_ += from_centre - from_centre * (new_zoom / zoom_);
  zoom_ = new_zoom;
  update();
}

void CanvasWidget::mousePressEvent(QMouseEvent* event) {
  Q_EMIT pressed();
  if (event->button() == Qt::LeftButton) {
    drag_start_ = event->position();
    pan_at_drag_start_ = pan_;
    setCursor(Qt::ClosedHandCursor);
  }
}

void CanvasWidget::mouseMoveEvent(QMouseEvent* event) {
  if (drag_start_) {
    pan_ = pan_at_drag_start_ + (event->position() - *drag_start_);
    update();
    return;
  }
  const std::optional<Cell> cell = cell_at(event->position().toPoint());
  if (cell && cell != pointed_) Q_EMIT cell_pointed(cell->row, cell->col);
  pointed_ = cell;
  const QString text = cell ? describe_cell(grid_, cell->row, cell->col) : QString();
  Q_EMIT cell_hovered(text);
  if (cell) QToolTip::showText(event->globalPosition().toPoint(), text, this);
  else QToolTip::hideText();
}

void CanvasWidget::mouseReleaseEvent(QMouseEvent*) {
  drag_start_.reset();
  unsetCursor();
}

void CanvasWidget::mouseDoubleClickEvent(QMouseEvent*) { reset_view(); }

void CanvasWidget::leaveEvent(QEvent*) {
  pointed_.reset();
  Q_EMIT cell_hovered({});
}

}  // namespace speculum::ui
