// The white canvas and font the command-line charts draw with (training curves, speed-quality, sweep grids).
#pragma once

#include <QFont>
#include <QImage>

namespace speculum::app {

inline QImage white_canvas(int width, int height) {
  QImage image(width, height, QImage::Format_RGB888);
  image.fill(Qt::white);
  return image;
}

inline QFont chart_font(int pixels = 12, bool bold = false) {
  QFont font("DejaVu Sans");
  font.setPixelSize(pixels);
  font.setBold(bold);
  return font;
}

}  // namespace speculum::app
