// The shapes prompt checker (GenEval-style, research/datasets.md appendix): parses a shapes caption into
// claims and scores an image for each with OpenCV — objects present in the named colour and shape,
// count, size, relation, background colour, and no unexpected objects. The image is correct when every
// claim holds. The background mode (gradient, noisy, striped) is parsed but not scored.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "data/shapes_scene.h"

namespace speculum::eval {

struct ObjectClaim {
  data::Shape shape = data::Shape::Circle;
  data::ObjectColor color = data::ObjectColor::Red;
  std::optional<bool> large;  // single-object prompts may name the size
};

struct ParsedPrompt {
  data::Family family = data::Family::Single;
  std::vector<ObjectClaim> objects;  // count: one entry, repeated `count` times in the image
  int count = 1;
  data::Relation relation = data::Relation::LeftOf;
  data::BackgroundColor background = data::BackgroundColor::Gray;
  data::BackgroundMode mode = data::BackgroundMode::Flat;
};

// Throws speculum::Error naming the word that does not fit the shapes grammar and what was expected.
ParsedPrompt parse_shapes_prompt(const std::string& prompt);

struct DetectedObject {
  data::Shape shape;
  data::ObjectColor color;
  double cx, cy;  // centroid
  int area;
  int width, height;  // bounding box
};

enum class ClaimKind { Object, Count, Size, Relation, Background, NoExtras };
const char* claim_kind_name(ClaimKind kind);  // "object", "count", ...

struct ClaimResult {
  ClaimKind kind;
  std::string claim;   // "a red circle is present"
  bool passed = false;
  std::string found;   // what the image shows instead, when it fails

  std::string failure() const { return claim + " (" + found + ")"; }  // "a red circle is present (0 found: ...)"
};

struct CheckReport {
  std::vector<ClaimResult> claims;
  std::vector<DetectedObject> detections;
  data::BackgroundColor background = data::BackgroundColor::Gray;
  bool passed() const;
};

// `rgb`: CV_8UC3 in RGB order, any size (scored at 64x64 scale).
std::vector<DetectedObject> detect_objects(const cv::Mat& rgb, data::BackgroundColor* background = nullptr);
CheckReport check_image(const cv::Mat& rgb, const ParsedPrompt& prompt);

// Image files as RGB CV_8UC3 (throws speculum::Error naming the file); PNG writing is atomic.
cv::Mat read_rgb_image(const std::string& path);
void write_rgb_png(const std::string& path, const cv::Mat& rgb);

}  // namespace speculum::eval
