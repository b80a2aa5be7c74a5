// The emerging image, scaled with nearest-neighbour so tokens stay crisp, with the pending-cell mask,
// the token-state layer and optional grid lines on top.
#pragma once

#include <QImage>
#include <QWidget>

#include "trace/grid_state.h"

namespace speculum::ui {

class CanvasWidget : public QWidget {
  Q_OBJECT
 public:
  explicit CanvasWidget(QWidget* parent = nullptr);

  void set_image(const QImage& image);
  void set_grid(const GridState& grid);
  void set_grid_lines(bool on);

 protected:
  void paintEvent(QPaintEvent* event) override;
  QSize sizeHint() const override { return {512, 512}; }

 private:
  QRect target_rect() const;

  QImage image_;
  GridState grid_;
  bool grid_lines_ = false;
};

}  // namespace speculum::ui
