// The emerging image with its overlay layers. Wheel zooms about the cursor, dragging pans, a double
// click fits the image again; hovering a cell shows its row, column, token, p, q, state and step, and, once
// committed, the target's entropy and most likely tokens there.
#pragma once

#include <QImage>
#include <QWidget>
#include <optional>

#include "frame_composer.h"
#include "speculum_tools.h"

namespace speculum::ui {

class CanvasWidget : public QWidget {
  Q_OBJECT
 public:
  explicit CanvasWidget(QWidget* parent = nullptr);

  void set_image(const QImage& image);
  void set_low_res_image(const QImage& image);  // MuLo-SD's low-resolution draft, for the LowRes layer's inset
  void set_grid(const GridState& grid);
  void set_style(const vis::FrameStyle& style);
  const vis::FrameStyle& style() const { return style_; }
  const GridState& grid() const { return grid_; }
  const QImage& image() const { return image_; }
  const QImage& low_res_image() const { return low_res_image_; }
  void reset_view();

  // The cell under a widget position, if any.
  std::optional<Cell> cell_at(QPoint position) const;
  // One line per topic: the cell, the target's distribution (when recorded), the draft (when there was one).
  static QString describe_cell(const GridState& grid, int row, int col);

 Q_SIGNALS:
  void cell_hovered(const QString& description);  // empty when the pointer leaves the grid
  void cell_pointed(int row, int col);             // the cell under the pointer, when it changes
  void pressed();                                  // a mouse button went down on the canvas

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  QSize sizeHint() const override { return {512, 512}; }

 private:
  QRectF target_rect() const;

  QImage image_;
  QImage low_res_image_;
  GridState grid_;
  vis::FrameStyle style_;
  double zoom_ = 1.0;
  QPointF pan_;  // offset of the image centre from the widget centre, in widget pixels
  std::optional<QPointF> drag_start_;
  QPointF pan_at_drag_start_;
  std::optional<Cell> pointed_;
};

}  // namespace speculum::ui
