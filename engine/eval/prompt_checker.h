// The shapes prompt checker (GenEval-style, research/datasets.md appendix): parses a shapes caption into
// claims and scores an image for each with OpenCV — objects present in the named colour and shape,
// count, size, relation, background colour, and no unexpected objects. The image is correct when every
// claim holds. The background mode (gradient, noisy, striped) is parsed but not scored.
#pragma once

#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "eval/check_report.h"

namespace speculum::eval {

// `rgb`: CV_8UC3 in RGB order, any size (scored at 64x64 scale).
std::vector<DetectedObject> detect_objects(const cv::Mat& rgb, data::BackgroundColor* background = nullptr);
CheckReport check_image(const cv::Mat& rgb, const ParsedPrompt& prompt);

// Image files as RGB CV_8UC3 (throws speculum::Error naming the file); PNG writing is atomic.
cv::Mat read_rgb_image(const std::string& path);
void write_rgb_png(const std::string& path, const cv::Mat& rgb);

}  // namespace speculum::eval
