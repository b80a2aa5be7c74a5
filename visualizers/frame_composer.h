// One picture of a generation at some point: the (partial) image, dimmed where cells are not committed
// yet, with the chosen overlay layers on top. Used by the canvas, the GIF export and the comparison
// export, so what is exported is what the window shows.
#pragma once

#include <QImage>
#include <set>

#include "overlay_layers.h"
#include "trace/grid_state.h"

namespace speculum::vis {

struct FrameStyle {
  std::set<Layer> layers = {Layer::TokenState};
  bool smooth = false;  // smooth image scaling; nearest keeps tokens crisp
  bool dim_pending = true;
  int last_step = 0;    // scale of the commit-step layer
};

// Paints into `painter` over `target` (image scaled to fit exactly). `low_res`: MuLo-SD's low-resolution
// picture for the LowRes layer's inset (null: none).
void paint_frame(QPainter& painter, const QRect& target, const QImage& image, const GridState& grid, const FrameStyle& style,
                 const QImage& low_res = {});
// The same into a new opaque image of `size` pixels.
QImage compose_frame(QSize size, const QImage& image, const GridState& grid, const FrameStyle& style, const QImage& low_res = {});

}  // namespace speculum::vis
