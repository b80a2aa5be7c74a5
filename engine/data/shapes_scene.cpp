#include "data/shapes_scene.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "sampling/counter_rng.h"

namespace speculum::data {
namespace {

constexpr std::array<Rgb, 8> kObjectPalette = {{{220, 40, 40}, {40, 170, 60}, {40, 80, 220}, {240, 210, 40},
                                                 {140, 60, 190}, {245, 130, 30}, {245, 245, 245}, {20, 20, 20}}};
constexpr std::array<Rgb, 4> kBackgroundPalette = {{{128, 128, 128}, {200, 185, 150}, {70, 135, 140}, {215, 150, 170}}};
constexpr const char* kShapeNames[] = {"circle", "square", "triangle", "star"};
constexpr const char* kShapePlurals[] = {"circles", "squares", "triangles", "stars"};
constexpr const char* kColorNames[] = {"red", "green", "blue", "yellow", "purple", "orange", "white", "black"};
constexpr const char* kBackgroundNames[] = {"gray", "beige", "teal", "pink"};
constexpr const char* kModeWords[] = {"", "gradient", "noisy", "striped"};
constexpr const char* kRelationWords[] = {"left of", "right of", "above", "below"};
constexpr const char* kFamilyNames[] = {"single", "count", "relation"};
constexpr const char* kCountWords[] = {"zero", "one", "two", "three", "four"};

// A small sequential generator on top of the counter-based hash: portable and reproducible.
class SceneRng {
 public:
  explicit SceneRng(std::uint64_t seed) : seed_(seed) {}
  double uniform() { return counter_uniform(seed_, RngStream::Data, 0, counter_++); }
  int below(int n) { return std::min(n - 1, static_cast<int>(uniform() * n)); }
  int between(int lo, int hi) { return lo + below(hi - lo + 1); }  // inclusive
  std::uint64_t bits() { return splitmix64(seed_ ^ (0xABCDull + counter_++)); }

 private:
  std::uint64_t seed_;
  std::uint64_t counter_ = 0;
};

int coordinate(SceneRng& rng, int half_extent) {
  const int margin = half_extent + 2;
  return rng.between(margin, kShapesImageSize - 1 - margin);
}

void place_count(Scene& scene, SceneRng& rng, int n) {
  const Shape shape = static_cast<Shape>(rng.below(4));
  const ObjectColor color = static_cast<ObjectColor>(rng.below(8));
  const int r = kCountHalfExtent;
  const double min_distance = 3 * r + 2;
  for (;;) {  // whole-layout restarts after 200 failed placements (datasets.md appendix)
    scene.objects.clear();
    int failures = 0;
    while (static_cast<int>(scene.objects.size()) < n && failures < 200) {
      const SceneObject candidate{shape, color, coordinate(rng, r), coordinate(rng, r), r};
      const bool clear = std::all_of(scene.objects.begin(), scene.objects.end(), [&](const SceneObject& o) {
        return std::hypot(o.cx - candidate.cx, o.cy - candidate.cy) > min_distance;
      });
      if (clear) scene.objects.push_back(candidate);
      else ++failures;
    }
    if (static_cast<int>(scene.objects.size()) == n) return;
  }
}

void place_pair(Scene& scene, SceneRng& rng) {
  const int r = kPairHalfExtent, gap = 2 * r + 4;
  SceneObject a{static_cast<Shape>(rng.below(4)), static_cast<ObjectColor>(rng.below(8)), 0, 0, r};
  SceneObject b{static_cast<Shape>(rng.below(4)), static_cast<ObjectColor>(rng.below(8)), 0, 0, r};
  while (a.shape == b.shape && a.color == b.color) b.color = static_cast<ObjectColor>(rng.below(8));
  scene.relation = static_cast<Relation>(rng.below(4));
  const bool horizontal = scene.relation == Relation::LeftOf || scene.relation == Relation::RightOf;
  const int lo = r + 2, hi = kShapesImageSize - 1 - (r + 2);
  // Along the relation axis: first < second by at least `gap`; across it: within +-8 px.
  const int first = rng.between(lo, hi - gap);
  const int second = rng.between(first + gap, hi);
  const int across = rng.between(lo + 8, hi - 8);
  const int jitter = rng.between(-8, 8);
  const bool a_first = scene.relation == Relation::LeftOf || scene.relation == Relation::Above;
  const int a_along = a_first ? first : second, b_along = a_first ? second : first;
  if (horizontal) {
    a.cx = a_along, b.cx = b_along, a.cy = across, b.cy = across + jitter;
  } else {
    a.cy = a_along, b.cy = b_along, a.cx = across, b.cx = across + jitter;
  }
  scene.objects = {a, b};
}

}  // namespace

const std::array<Rgb, 8>& object_palette() { return kObjectPalette; }
const std::array<Rgb, 4>& background_palette() { return kBackgroundPalette; }
const char* shape_name(Shape s) { return kShapeNames[static_cast<int>(s)]; }
const char* shape_plural(Shape s) { return kShapePlurals[static_cast<int>(s)]; }
const char* color_name(ObjectColor c) { return kColorNames[static_cast<int>(c)]; }
const char* background_name(BackgroundColor c) { return kBackgroundNames[static_cast<int>(c)]; }
const char* mode_word(BackgroundMode m) { return kModeWords[static_cast<int>(m)]; }
const char* mode_name(BackgroundMode m) { return m == BackgroundMode::Flat ? "flat" : mode_word(m); }
const char* relation_words(Relation r) { return kRelationWords[static_cast<int>(r)]; }
const char* family_name(Family f) { return kFamilyNames[static_cast<int>(f)]; }

namespace {

std::string with_article(const std::string& phrase) {
  return (std::string("aeiou").find(phrase.front()) != std::string::npos ? "an " : "a ") + phrase;
}

}  // namespace

std::string Scene::caption() const {
  std::string subject;
  const SceneObject& first = objects.front();
  switch (family) {
    case Family::Single:
      subject = with_article(std::string(sized ? (first.half_extent == kLargeHalfExtent ? "large " : "small ") : "") +
                             color_name(first.color) + " " + shape_name(first.shape));
      break;
    case Family::Count:
      subject = std::string(kCountWords[objects.size()]) + " " + color_name(first.color) + " " + shape_plural(first.shape);
      break;
    case Family::Relation:
      subject = with_article(std::string(color_name(first.color)) + " " + shape_name(first.shape)) + " " +
                relation_words(relation) + " " +
                with_article(std::string(color_name(objects[1].color)) + " " + shape_name(objects[1].shape));
      break;
  }
  const std::string mode = mode_word(this->mode);
  return subject + " on a " + (mode.empty() ? "" : mode + " ") + background_name(background) + " background";
}

Scene sample_scene(std::uint64_t seed) {
  SceneRng rng(seed);
  Scene scene;
  const double family = rng.uniform();
  scene.family = family < 0.4 ? Family::Single : family < 0.65 ? Family::Count : Family::Relation;
  scene.background = static_cast<BackgroundColor>(rng.below(4));
  scene.mode = static_cast<BackgroundMode>(rng.below(4));
  scene.texture_seed = rng.bits();
  switch (scene.family) {
    case Family::Single: {
      scene.sized = rng.uniform() < 0.5;
      const int r = scene.sized && rng.uniform() < 0.5 ? kLargeHalfExtent : kSmallHalfExtent;
      scene.objects = {{static_cast<Shape>(rng.below(4)), static_cast<ObjectColor>(rng.below(8)), coordinate(rng, r),
                        coordinate(rng, r), r}};
      break;
    }
    case Family::Count: place_count(scene, rng, rng.between(2, 4)); break;
    case Family::Relation: place_pair(scene, rng); break;
  }
  return scene;
}

std::vector<std::string> caption_vocabulary() {
  std::set<std::string> words = {"a", "an", "two", "three", "four", "small", "large", "on", "background", "left", "right",
                                 "of", "above", "below"};
  for (auto* w : kShapeNames) words.insert(w);
  for (auto* w : kShapePlurals) words.insert(w);
  for (auto* w : kColorNames) words.insert(w);
  for (auto* w : kBackgroundNames) words.insert(w);
  for (int i = 1; i < 4; ++i) words.insert(kModeWords[i]);
  return {words.begin(), words.end()};
}

std::vector<std::vector<std::string>> caption_foil_groups() {
  return {{std::begin(kShapeNames), std::end(kShapeNames)},
          {std::begin(kShapePlurals), std::end(kShapePlurals)},
          {"two", "three", "four"},
          {"left", "right"},
          {"above", "below"},
          {"small", "large"}};
}

std::vector<std::vector<std::string>> caption_exchange_groups() {
  return {{std::begin(kColorNames), std::end(kColorNames)}, {std::begin(kShapeNames), std::end(kShapeNames)}};
}

}  // namespace speculum::data
