// Renders a shapes Scene to a 64x64 RGB image (CV_8UC3, RGB order) with anti-aliased OpenCV drawing.
#pragma once

#include <opencv2/core.hpp>

#include "data/shapes_scene.h"

namespace speculum::data {

cv::Mat render_scene(const Scene& scene);

// The share of each of the grid x grid cells (raster order) that the scene's objects cover, 0..1 (anti-aliased edges
// count in part): where a caption's shape, count and relation words decide the image, for weighting the target's loss.
std::vector<float> object_share_per_cell(const Scene& scene, int grid);

}  // namespace speculum::data
