// The procedural "shapes" dataset (research/datasets.md §2): seeded 64x64 scenes of circles, squares,
// triangles and stars in named colours on flat, gradient, noisy or striped backgrounds, each with its
// caption. Three caption families, as in GenEval: single object, counting, two-object relation.
// Scene description and captions are plain C++; rendering (shapes_render.h) uses OpenCV.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace speculum::data {

inline constexpr int kShapesImageSize = 64;
// Held-out scenes (the eval protocol's prompts, bench's builtin prompts, the FD reference) use seeds from here
// on; training data uses seeds below 10^8.
inline constexpr std::uint64_t kHeldOutSceneSeeds = 700000000;

enum class Shape { Circle, Square, Triangle, Star };
enum class ObjectColor { Red, Green, Blue, Yellow, Purple, Orange, White, Black };
enum class BackgroundColor { Gray, Beige, Teal, Pink };
enum class BackgroundMode { Flat, Gradient, Noisy, Striped };
enum class Relation { LeftOf, RightOf, Above, Below };
enum class Family { Single, Count, Relation };

struct Rgb {
  std::uint8_t r, g, b;
};

const std::array<Rgb, 8>& object_palette();
const std::array<Rgb, 4>& background_palette();

const char* shape_name(Shape shape);          // "circle"
const char* shape_plural(Shape shape);        // "circles"
const char* color_name(ObjectColor color);    // "red"
const char* background_name(BackgroundColor color);
const char* mode_word(BackgroundMode mode);   // "" for flat, else "gradient" / "noisy" / "striped"
const char* mode_name(BackgroundMode mode);   // "flat" / "gradient" / "noisy" / "striped"
const char* relation_words(Relation relation);  // "left of", "above", ...
const char* family_name(Family family);

// Groups of caption words that can stand for one another: swapping one word of a caption for another of its group
// (a shape, a plural, a count, a side, a size) gives a well-formed caption of a different scene — a foil for training
// the model to tell the two apart (TargetTrainParams::caption_contrast).
std::vector<std::vector<std::string>> caption_foil_groups();
// Words a caption can hold two different ones of (a relation's two colours, two shapes): the caption contrast's
// exchange foils.
std::vector<std::vector<std::string>> caption_exchange_groups();

// Half-extents (pixels) by use, chosen so that the checker separates sizes and shapes reliably.
inline constexpr int kSmallHalfExtent = 11;
inline constexpr int kLargeHalfExtent = 20;
inline constexpr int kCountHalfExtent = 9;
inline constexpr int kPairHalfExtent = 12;

struct SceneObject {
  Shape shape = Shape::Circle;
  ObjectColor color = ObjectColor::Red;
  int cx = 32;
  int cy = 32;
  int half_extent = kSmallHalfExtent;
};

struct Scene {
  Family family = Family::Single;
  BackgroundColor background = BackgroundColor::Gray;
  BackgroundMode mode = BackgroundMode::Flat;
  std::vector<SceneObject> objects;  // relation: objects[0] REL objects[1]
  Relation relation = Relation::LeftOf;
  bool sized = false;               // single: the caption names the size
  std::uint64_t texture_seed = 0;   // noise / stripe phase / gradient direction

  std::string caption() const;
};

// Deterministic for a seed, on every platform (its own counter-based randomness).
Scene sample_scene(std::uint64_t seed);

// Every word a shapes caption can use, sorted.
std::vector<std::string> caption_vocabulary();

}  // namespace speculum::data
