// What the shapes prompt checker says about an image, without OpenCV: the claims a shapes caption makes, and the
// verdict on each (eval/prompt_checker.h scores images; speculum_tools.h offers it to front ends).
#pragma once

#include <optional>
#include <string>
#include <vector>

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

}  // namespace speculum::eval
