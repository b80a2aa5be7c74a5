#include "eval/prompt_checker.h"

#include <cstring>
#include <fstream>
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <sstream>

#include "error.h"
#include "io/input_file.h"
#include "io/limits.h"

namespace speculum::eval {
namespace {

using namespace speculum::data;

constexpr int kMinArea = 20;
constexpr double kMaxAreaShare = 0.5;  // a large square covers 41 % of the image
constexpr int kColorRadius = 100;       // L1 distance to the nearest palette colour
constexpr int kLargeSide = 30;          // bounding-box side above which an object is "large"
constexpr double kRelationMargin = 4;   // centroid difference along the named axis

std::optional<int> find_name(const std::string& word, int count, const char* (*name_of)(int)) {
  for (int i = 0; i < count; ++i)
    if (word == name_of(i)) return i;
  return std::nullopt;
}

const char* shape_at(int i) { return shape_name(static_cast<Shape>(i)); }
const char* plural_at(int i) { return shape_plural(static_cast<Shape>(i)); }
const char* color_at(int i) { return color_name(static_cast<ObjectColor>(i)); }
const char* background_at(int i) { return background_name(static_cast<BackgroundColor>(i)); }

class Words {
 public:
  explicit Words(const std::string& text) {
    std::istringstream in(text);
    for (std::string w; in >> w;) {
      std::transform(w.begin(), w.end(), w.begin(), [](unsigned char c) { return std::tolower(c); });
      words_.push_back(w);
    }
  }
  bool done() const { return at_ >= words_.size(); }
  const std::string& peek() const {
    static const std::string end = "<end>";
    return done() ? end : words_[at_];
  }
  std::string next() { return done() ? "<end>" : words_[at_++]; }
  [[noreturn]] void fail(const std::string& expected) const {
    throw Error("prompt word " + std::to_string(at_ + 1) + " '" + peek() + "': expected " + expected +
                " (the shapes grammar: 'a [small|large] COLOR SHAPE [REL a COLOR SHAPE] | N COLOR SHAPES' "
                "then 'on a [gradient|noisy|striped] BACKGROUND background')");
  }
  void expect_article() {
    if (peek() != "a" && peek() != "an") fail("'a' or 'an'");
    ++at_;
  }
  void expect(const std::string& word) {
    if (peek() != word) fail("'" + word + "'");
    ++at_;
  }
  template <typename Enum>
  Enum one_of(int count, const char* (*name_of)(int), const std::string& what) {
    const auto i = find_name(peek(), count, name_of);
    if (!i) {
      std::string allowed;
      for (int k = 0; k < count; ++k) allowed += std::string(allowed.empty() ? "" : ", ") + name_of(k);
      fail(what + " (" + allowed + ")");
    }
    ++at_;
    return static_cast<Enum>(*i);
  }

 private:
  std::vector<std::string> words_;
  std::size_t at_ = 0;
};

ObjectClaim parse_object(Words& w, bool allow_size) {
  ObjectClaim o;
  if (allow_size && (w.peek() == "small" || w.peek() == "large")) o.large = w.next() == "large";
  o.color = w.one_of<ObjectColor>(8, color_at, "a colour");
  o.shape = w.one_of<Shape>(4, shape_at, "a shape");
  return o;
}

std::string describe(const ObjectClaim& o) {
  return std::string(color_name(o.color)) + " " + shape_name(o.shape);
}

std::string describe(const DetectedObject& d) {
  std::ostringstream s;
  s << color_name(d.color) << " " << shape_name(d.shape) << " at (" << int(d.cx) << ", " << int(d.cy) << ")";
  return s.str();
}

std::string describe(const std::vector<DetectedObject>& found) {
  if (found.empty()) return "no objects";
  std::string s;
  for (const auto& d : found) s += (s.empty() ? "" : "; ") + describe(d);
  return s;
}

std::string with_article(const std::string& phrase) {
  return (std::string("aeiou").find(phrase.front()) != std::string::npos ? "an " : "a ") + phrase;
}

int l1(const cv::Vec3b& p, const Rgb& c) { return std::abs(p[0] - c.r) + std::abs(p[1] - c.g) + std::abs(p[2] - c.b); }

Shape classify(const cv::Mat& component, int area, const cv::Rect& box) {
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(component, contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE);
  std::vector<cv::Point> points;
  for (const auto& c : contours) points.insert(points.end(), c.begin(), c.end());
  std::vector<cv::Point> hull;
  cv::convexHull(points, hull);
  const double hull_area = std::max(1.0, cv::contourArea(hull));
  const double solidity = std::min(1.0, area / hull_area);
  const double extent = double(area) / (box.width * box.height);
  if (solidity < 0.8) return Shape::Star;
  if (extent > 0.85) return Shape::Square;
  if (extent < 0.62) return Shape::Triangle;
  return Shape::Circle;
}

}  // namespace

const char* claim_kind_name(ClaimKind kind) {
  constexpr const char* names[] = {"object", "count", "size", "relation", "background", "no_extras"};
  return names[static_cast<int>(kind)];
}

bool CheckReport::passed() const {
  return std::all_of(claims.begin(), claims.end(), [](const ClaimResult& c) { return c.passed; });
}

ParsedPrompt parse_shapes_prompt(const std::string& prompt) {
  Words w(prompt);
  ParsedPrompt p;
  if (const auto n = find_name(w.peek(), 5, [](int i) {
        constexpr const char* counts[] = {"", "", "two", "three", "four"};
        return counts[i];
      });
      n && *n >= 2) {
    w.next();
    p.family = Family::Count;
    p.count = *n;
    ObjectClaim o;
    o.color = w.one_of<ObjectColor>(8, color_at, "a colour");
    o.shape = w.one_of<Shape>(4, plural_at, "a plural shape");
    p.objects = {o};
  } else {
    w.expect_article();
    p.objects = {parse_object(w, true)};
    p.family = Family::Single;
    const std::string rel = w.peek();
    if (rel == "left" || rel == "right" || rel == "above" || rel == "below") {
      if (p.objects[0].large) w.fail("no size word in a relation prompt");
      w.next();
      if (rel == "left" || rel == "right") w.expect("of");
      p.relation = rel == "left" ? Relation::LeftOf : rel == "right" ? Relation::RightOf : rel == "above" ? Relation::Above : Relation::Below;
      w.expect_article();
      p.objects.push_back(parse_object(w, false));
      p.family = Family::Relation;
    }
  }
  w.expect("on");
  w.expect("a");
  if (const auto m = find_name(w.peek(), 4, [](int i) { return mode_word(static_cast<BackgroundMode>(i)); }); m && *m > 0) {
    p.mode = static_cast<BackgroundMode>(*m);
    w.next();
  }
  p.background = w.one_of<BackgroundColor>(4, background_at, "a background colour");
  w.expect("background");
  if (!w.done()) w.fail("the end of the prompt");
  return p;
}

std::vector<DetectedObject> detect_objects(const cv::Mat& input, BackgroundColor* background) {
  if (input.empty() || input.type() != CV_8UC3) throw Error("the checker needs an 8-bit RGB image");
  cv::Mat rgb = input;
  if (rgb.rows != kShapesImageSize || rgb.cols != kShapesImageSize)
    cv::resize(input, rgb, {kShapesImageSize, kShapesImageSize}, 0, 0, cv::INTER_AREA);

  std::vector<int> border[3];
  for (int i = 0; i < rgb.cols; ++i)
    for (int y : {0, rgb.rows - 1})
      for (int c = 0; c < 3; ++c) border[c].push_back(rgb.at<cv::Vec3b>(y, i)[c]);
  for (int i = 1; i < rgb.rows - 1; ++i)
    for (int x : {0, rgb.cols - 1})
      for (int c = 0; c < 3; ++c) border[c].push_back(rgb.at<cv::Vec3b>(i, x)[c]);
  Rgb bg{};
  std::uint8_t* channels[3] = {&bg.r, &bg.g, &bg.b};
  for (int c = 0; c < 3; ++c) {
    std::nth_element(border[c].begin(), border[c].begin() + border[c].size() / 2, border[c].end());
    *channels[c] = static_cast<std::uint8_t>(border[c][border[c].size() / 2]);
  }
  if (background) {
    int best = 0;
    for (int i = 1; i < 4; ++i) {
      const cv::Vec3b v(bg.r, bg.g, bg.b);
      if (l1(v, background_palette()[i]) < l1(v, background_palette()[best])) best = i;
    }
    *background = static_cast<BackgroundColor>(best);
  }

  // Each pixel to its nearest object colour, if near enough and nearer than the background.
  std::vector<cv::Mat> masks(8);
  for (auto& m : masks) m = cv::Mat::zeros(rgb.size(), CV_8U);
  for (int y = 0; y < rgb.rows; ++y) {
    for (int x = 0; x < rgb.cols; ++x) {
      const cv::Vec3b p = rgb.at<cv::Vec3b>(y, x);
      int best = 0;
      for (int i = 1; i < 8; ++i)
        if (l1(p, object_palette()[i]) < l1(p, object_palette()[best])) best = i;
      const int d = l1(p, object_palette()[best]);
      if (d < kColorRadius && d < l1(p, bg)) masks[best].at<std::uint8_t>(y, x) = 255;
    }
  }

  std::vector<DetectedObject> found;
  const int max_area = static_cast<int>(kMaxAreaShare * rgb.rows * rgb.cols);
  for (int color = 0; color < 8; ++color) {
    cv::Mat labels, stats, centroids;
    const int n = cv::connectedComponentsWithStats(masks[color], labels, stats, centroids, 8);
    for (int i = 1; i < n; ++i) {
      const int area = stats.at<int>(i, cv::CC_STAT_AREA);
      if (area < kMinArea || area > max_area) continue;
      const cv::Rect box(stats.at<int>(i, cv::CC_STAT_LEFT), stats.at<int>(i, cv::CC_STAT_TOP),
                         stats.at<int>(i, cv::CC_STAT_WIDTH), stats.at<int>(i, cv::CC_STAT_HEIGHT));
      const cv::Mat component = (labels == i);
      found.push_back({classify(component, area, box), static_cast<ObjectColor>(color), centroids.at<double>(i, 0),
                       centroids.at<double>(i, 1), area, box.width, box.height});
    }
  }
  return found;
}

cv::Mat read_rgb_image(const std::string& path) {
  check_input_file(path, limits::kMaxImageFileBytes, "image");  // not a FIFO or device
  // The size before decoding: a PNG's IHDR says it, and a 30000x30000 image must not cost 5 GB to refuse.
  std::ifstream head(path, std::ios::binary);
  unsigned char bytes[24] = {};
  head.read(reinterpret_cast<char*>(bytes), sizeof bytes);
  if (head.gcount() == 24 && std::memcmp(bytes, "\x89PNG\r\n\x1a\n", 8) == 0) {
    const auto be32 = [&](int at) { return (std::uint64_t(bytes[at]) << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]; };
    const std::uint64_t width = be32(16), height = be32(20);
    if (width > static_cast<std::uint64_t>(limits::kMaxImageSide) || height > static_cast<std::uint64_t>(limits::kMaxImageSide) ||
        width * height > limits::kMaxImagePixels)
      throw Error("image '" + path + "' is " + std::to_string(width) + "x" + std::to_string(height) + " pixels; the limit is " +
                  std::to_string(limits::kMaxImageSide) + " a side and " + std::to_string(limits::kMaxImagePixels) + " pixels");
  }
  const cv::Mat bgr = cv::imread(path, cv::IMREAD_COLOR);
  if (bgr.empty()) throw Error("cannot read image '" + path + "' (missing, or not PNG/JPEG/BMP)");
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return rgb;
}

void write_rgb_png(const std::string& path, const cv::Mat& rgb) {
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  const std::string partial = path + ".partial.png";
  if (!cv::imwrite(partial, bgr) || std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    throw Error("cannot write image '" + path + "'");
  }
}

CheckReport check_image(const cv::Mat& rgb, const ParsedPrompt& prompt) {
  CheckReport report;
  report.detections = detect_objects(rgb, &report.background);
  const auto& found = report.detections;
  auto matching = [&](const ObjectClaim& o) {
    std::vector<const DetectedObject*> m;
    for (const auto& d : found)
      if (d.shape == o.shape && d.color == o.color) m.push_back(&d);
    return m;
  };
  auto add = [&](ClaimKind kind, std::string claim, bool passed, std::string shows) {
    report.claims.push_back({kind, std::move(claim), passed, passed ? "" : std::move(shows)});
  };

  std::size_t expected_objects = 0;
  if (prompt.family == Family::Count) {
    const ObjectClaim& o = prompt.objects[0];
    const auto m = matching(o);
    add(ClaimKind::Count, std::to_string(prompt.count) + " " + color_name(o.color) + " " + shape_plural(o.shape),
        static_cast<int>(m.size()) == prompt.count, std::to_string(m.size()) + " found: " + describe(found));
    expected_objects = prompt.count;
  } else {
    std::vector<const DetectedObject*> located;
    for (const auto& o : prompt.objects) {
      const auto m = matching(o);
      add(ClaimKind::Object, with_article(describe(o)) + " is present", m.size() == 1,
          std::to_string(m.size()) + " found: " + describe(found));
      located.push_back(m.size() == 1 ? m[0] : nullptr);
      if (o.large && located.back()) {
        const DetectedObject& d = *located.back();
        const bool large = std::max(d.width, d.height) > kLargeSide;
        add(ClaimKind::Size, std::string("the ") + describe(o) + " is " + (*o.large ? "large" : "small"),
            large == *o.large, std::to_string(std::max(d.width, d.height)) + " px across");
      } else if (o.large) {
        add(ClaimKind::Size, std::string("the ") + describe(o) + " is " + (*o.large ? "large" : "small"), false,
            "object not found");
      }
    }
    expected_objects = prompt.objects.size();
    if (prompt.family == Family::Relation) {
      const std::string claim = "the " + describe(prompt.objects[0]) + " is " + relation_words(prompt.relation) +
                                " the " + describe(prompt.objects[1]);
      if (!located[0] || !located[1]) {
        add(ClaimKind::Relation, claim, false, "an object is missing");
      } else {
        const DetectedObject &a = *located[0], &b = *located[1];
        bool holds = false;
        switch (prompt.relation) {
          case Relation::LeftOf: holds = b.cx - a.cx > kRelationMargin; break;
          case Relation::RightOf: holds = a.cx - b.cx > kRelationMargin; break;
          case Relation::Above: holds = b.cy - a.cy > kRelationMargin; break;
          case Relation::Below: holds = a.cy - b.cy > kRelationMargin; break;
        }
        add(ClaimKind::Relation, claim, holds, describe(a) + " vs " + describe(b));
      }
    }
  }
  add(ClaimKind::Background, std::string("the background is ") + background_name(prompt.background),
      report.background == prompt.background, std::string("looks ") + background_name(report.background));
  add(ClaimKind::NoExtras, "no other objects", found.size() == expected_objects,
      std::to_string(found.size()) + " objects: " + describe(found));
  return report;
}

}  // namespace speculum::eval
