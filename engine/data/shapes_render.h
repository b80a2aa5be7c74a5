// Renders a shapes Scene to a 64x64 RGB image (CV_8UC3, RGB order) with anti-aliased OpenCV drawing.
#pragma once

#include <opencv2/core.hpp>

#include "data/shapes_scene.h"

namespace speculum::data {

cv::Mat render_scene(const Scene& scene);

}  // namespace speculum::data
