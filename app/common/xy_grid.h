// An X/Y plot of images (AUTOMATIC1111's "X/Y plot"): one image per pair of axis values, columns along X,
// rows along Y, labelled axes, an optional note under each image (NFE, time) and an optional reference image
// at the left (ar's, in a sweep). Drawn by `speculum-cli sweep --grid` and the studio's X/Y plot alike.
#pragma once

#include <QImage>
#include <QString>
#include <QStringList>
#include <vector>

namespace speculum::app {

struct XyGrid {
  QString title;
  QString x_name, y_name;       // y_name empty: one row
  QStringList x_values, y_values;
  std::vector<QImage> images;   // row by row: image (row r, column c) at r * x_values.size() + c
  QStringList notes;            // one per image, or empty
  QImage reference;             // null: none
  QString reference_label;
};

QImage render_xy_grid(const XyGrid& grid);

}  // namespace speculum::app
