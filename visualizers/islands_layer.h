// MuLo-SD's local resampling (research/seed-methods.md §4.3, §6.5): every island filled in its own colour and
// each of its cells labelled with the pass that redrew it (1 = from the verifying pass itself), rejected seeds
// crossed out, the expansion's outline, and the latest up-sampled block split into its r×r blocks (one
// low-resolution cell each). Also the low-resolution draft as an inset. Pure functions of the grid state,
// painted at the canvas's pixel size so lines and labels stay sharp.
#pragma once

#include <QColor>
#include <QImage>
#include <QPainter>
#include <QRect>
#include <QSize>

#include "trace/grid_state.h"

namespace speculum::vis {

inline const QColor kSeedColor(255, 40, 40);
inline const QColor kExpansionColor(255, 230, 0);
inline const QColor kUpsampledBlockColor(0, 190, 255, 200);
inline const QColor kLowResDraftColor(255, 140, 0);

QColor island_color(int island);  // a fixed palette by id, translucent
QImage paint_islands_layer(const GridState& grid, QSize size);
// The low-resolution picture `low_res` (the drafter's grid decoded) in the top-right corner of `target`,
// a third of its width, framed, with the latest drafted low-resolution cells outlined. Nothing when null.
void paint_low_res_inset(QPainter& painter, const QRect& target, const QImage& low_res, const GridState& grid);

}  // namespace speculum::vis
