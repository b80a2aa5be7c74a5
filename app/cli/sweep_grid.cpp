#include "cli/sweep_grid.h"

#include "common/offscreen_gui.h"
#include "common/png_export.h"
#include "common/xy_grid.h"

namespace speculum::cli {

namespace {

QImage to_qimage(const Image& image) {
  return QImage(image.rgb.data(), image.width, image.height, image.width * 3, QImage::Format_RGB888).copy();
}

QStringList labels(const std::vector<double>& values) {
  QStringList out;
  for (double v : values) out << QString::number(v);
  return out;
}

}  // namespace

void write_sweep_grid(const std::string& method, const std::vector<SweepAxis>& axes, const std::vector<Image>& images,
                      const std::string& caption, const std::string& path) {
  app::OffscreenGui gui;
  app::XyGrid grid;
  grid.title = QString::fromStdString(method + ": " + caption);
  grid.x_name = QString::fromStdString(axes[0].name);
  grid.x_values = labels(axes[0].values);
  if (axes.size() > 1) {
    grid.y_name = QString::fromStdString(axes[1].name);
    grid.y_values = labels(axes[1].values);
  }
  const std::size_t cols = axes[0].values.size(), rows = axes.size() > 1 ? axes[1].values.size() : 1;
  for (std::size_t r = 0; r < rows; ++r)  // sweep orders settings with the first axis outer
    for (std::size_t c = 0; c < cols; ++c) grid.images.push_back(to_qimage(images[1 + c * rows + r]));
  grid.reference = to_qimage(images[0]);
  grid.reference_label = "ar (reference)";
  app::write_png(path, app::render_xy_grid(grid), {});
}

}  // namespace speculum::cli
