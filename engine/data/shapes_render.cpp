#include "data/shapes_render.h"

#include <cmath>
#include <opencv2/imgproc.hpp>

#include "sampling/counter_rng.h"

namespace speculum::data {
namespace {

cv::Scalar to_scalar(const Rgb& c) { return cv::Scalar(c.r, c.g, c.b); }

void paint_background(cv::Mat& image, const Scene& scene) {
  const Rgb base = background_palette()[static_cast<int>(scene.background)];
  const std::uint64_t seed = scene.texture_seed;
  const double angle = counter_uniform(seed, RngStream::Data, 1, 0) * 2 * M_PI;
  const int phase = static_cast<int>(counter_uniform(seed, RngStream::Data, 1, 1) * 8);
  for (int y = 0; y < image.rows; ++y) {
    for (int x = 0; x < image.cols; ++x) {
      double offset[3] = {0, 0, 0};
      switch (scene.mode) {
        case BackgroundMode::Flat: break;
        case BackgroundMode::Gradient: {  // +-20 per channel along a random direction
          const double t = ((x - 31.5) * std::cos(angle) + (y - 31.5) * std::sin(angle)) / (31.5 * std::sqrt(2.0));
          offset[0] = offset[1] = offset[2] = 20 * t;
          break;
        }
        case BackgroundMode::Noisy:  // Gaussian, sigma 7, per channel (Box-Muller on counter draws)
          for (int c = 0; c < 3; ++c) {
            const std::uint64_t slot = (static_cast<std::uint64_t>(y) * 64 + x) * 3 + c;
            const double u1 = std::max(1e-12, counter_uniform(seed, RngStream::Data, 2, slot));
            const double u2 = counter_uniform(seed, RngStream::Data, 3, slot);
            offset[c] = 7 * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
          }
          break;
        case BackgroundMode::Striped:  // diagonal stripes, 4 px on, 4 px off, +18
          if (((x + y + phase) / 4) % 2 == 0) offset[0] = offset[1] = offset[2] = 18;
          break;
      }
      auto& px = image.at<cv::Vec3b>(y, x);
      px[0] = cv::saturate_cast<std::uint8_t>(base.r + offset[0]);
      px[1] = cv::saturate_cast<std::uint8_t>(base.g + offset[1]);
      px[2] = cv::saturate_cast<std::uint8_t>(base.b + offset[2]);
    }
  }
}

void paint_object(cv::Mat& image, const SceneObject& o, const cv::Scalar& color) {
  const int r = o.half_extent;
  switch (o.shape) {
    case Shape::Circle: cv::circle(image, {o.cx, o.cy}, r, color, cv::FILLED, cv::LINE_AA); break;
    case Shape::Square: cv::rectangle(image, {o.cx - r, o.cy - r}, {o.cx + r, o.cy + r}, color, cv::FILLED, cv::LINE_AA); break;
    case Shape::Triangle: {
      const std::vector<cv::Point> points = {{o.cx, o.cy - r}, {o.cx - r, o.cy + r}, {o.cx + r, o.cy + r}};
      cv::fillPoly(image, std::vector<std::vector<cv::Point>>{points}, color, cv::LINE_AA);
      break;
    }
    case Shape::Star: {
      std::vector<cv::Point> points;
      for (int i = 0; i < 10; ++i) {
        const double radius = i % 2 == 0 ? r : 0.4 * r;
        const double a = -M_PI / 2 + i * M_PI / 5;
        points.emplace_back(static_cast<int>(std::lround(o.cx + radius * std::cos(a))),
                            static_cast<int>(std::lround(o.cy + radius * std::sin(a))));
      }
      cv::fillPoly(image, std::vector<std::vector<cv::Point>>{points}, color, cv::LINE_AA);
      break;
    }
  }
}

}  // namespace

cv::Mat render_scene(const Scene& scene) {
  cv::Mat image(kShapesImageSize, kShapesImageSize, CV_8UC3);
  paint_background(image, scene);
  for (const auto& o : scene.objects) paint_object(image, o, to_scalar(object_palette()[static_cast<int>(o.color)]));
  return image;
}

std::vector<float> object_share_per_cell(const Scene& scene, int grid) {
  cv::Mat mask = cv::Mat::zeros(kShapesImageSize, kShapesImageSize, CV_8UC1);
  for (const auto& o : scene.objects) paint_object(mask, o, cv::Scalar(255));
  cv::Mat cells;
  cv::resize(mask, cells, {grid, grid}, 0, 0, cv::INTER_AREA);  // each cell's mean coverage
  std::vector<float> share(static_cast<std::size_t>(grid) * grid);
  for (int y = 0; y < grid; ++y)
    for (int x = 0; x < grid; ++x) share[static_cast<std::size_t>(y) * grid + x] = cells.at<std::uint8_t>(y, x) / 255.0f;
  return share;
}

}  // namespace speculum::data
