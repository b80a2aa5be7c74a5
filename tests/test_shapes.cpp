// The shapes dataset and its checker: deterministic scenes whose captions describe them; the checker
// passes ground truth and fails each kind of wrong image on the right claim.
#include "data/shapes_render.h"
#include "eval/prompt_checker.h"
#include "models/text_vocabulary.h"
#include "test_helpers.h"

using namespace speculum;
using namespace speculum::data;
using speculum::eval::ClaimKind;

namespace {

// Which claims of `prompt` fail on the rendered `scene`.
std::vector<ClaimKind> failing(const Scene& scene, const std::string& prompt) {
  std::vector<ClaimKind> kinds;
  for (const auto& c : eval::check_image(render_scene(scene), eval::parse_shapes_prompt(prompt)).claims)
    if (!c.passed) kinds.push_back(c.kind);
  return kinds;
}

Scene pair(SceneObject a, SceneObject b, Relation relation) {
  Scene s;
  s.family = Family::Relation;
  s.objects = {a, b};
  s.relation = relation;
  return s;
}

}  // namespace

class TestShapes : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void object_shares_cover_the_objects_cells() {
    Scene s;
    s.objects = {SceneObject{Shape::Square, ObjectColor::Red, 32, 32, 8}};  // pixels 24..40 inclusive
    const std::vector<float> share = object_share_per_cell(s, 16);
    QCOMPARE(share.size(), std::size_t(256));
    QCOMPARE(share[7 * 16 + 7], 1.0f);   // cell (7, 7): pixels 28..31, inside
    QCOMPARE(share[0], 0.0f);            // a corner, outside
    QCOMPARE(share[15 * 16 + 8], 0.0f);  // bottom row, outside
    double covered = 0;
    for (float v : share) covered += v * 16;  // 16 pixels a cell
    QVERIFY2(std::abs(covered - 17 * 17) < 17, qPrintable(QString::number(covered)));  // the square's area, edges anti-aliased
    s.objects.push_back(SceneObject{Shape::Circle, ObjectColor::Blue, 8, 56, 5});  // another object, far away
    const std::vector<float> both = object_share_per_cell(s, 16);
    for (int cell = 0; cell < 256; ++cell) QCOMPARE(both[cell] > 0 && cell / 16 < 12, share[cell] > 0);  // the square's cells stay (the circle is in rows 12..15)
    QCOMPARE(both[14 * 16 + 2], 1.0f);  // the circle's centre cell (pixels 8..11, 56..59)
  }

  void scenes_are_deterministic_per_seed() {
    for (std::uint64_t seed : {0ull, 1ull, 12345ull}) {
      const Scene a = sample_scene(seed), b = sample_scene(seed);
      QCOMPARE(a.caption(), b.caption());
      const cv::Mat ia = render_scene(a), ib = render_scene(b);
      QCOMPARE(cv::norm(ia, ib, cv::NORM_L1), 0.0);
      QCOMPARE(ia.rows, 64);
      QCOMPARE(ia.type(), CV_8UC3);
    }
    int distinct = 0;
    for (int i = 0; i < 50; ++i) distinct += sample_scene(i).caption() != sample_scene(i + 50).caption();
    QVERIFY(distinct > 40);
  }

  void captions_describe_their_scenes() {
    int families[3] = {0, 0, 0}, modes[4] = {0, 0, 0, 0};
    const auto vocabulary = caption_vocabulary();
    for (std::uint64_t seed = 0; seed < 400; ++seed) {
      const Scene s = sample_scene(seed);
      const eval::ParsedPrompt p = eval::parse_shapes_prompt(s.caption());
      QCOMPARE(p.family, s.family);
      QCOMPARE(p.background, s.background);
      QCOMPARE(p.mode, s.mode);
      ++families[static_cast<int>(s.family)];
      ++modes[static_cast<int>(s.mode)];
      if (s.family == Family::Count) {
        QCOMPARE(p.count, static_cast<int>(s.objects.size()));
        QVERIFY(p.count >= 2 && p.count <= 4);
        for (const auto& o : s.objects) QVERIFY(o.shape == p.objects[0].shape && o.color == p.objects[0].color);
      } else {
        QCOMPARE(p.objects.size(), s.objects.size());
        for (std::size_t i = 0; i < s.objects.size(); ++i) {
          QCOMPARE(p.objects[i].shape, s.objects[i].shape);
          QCOMPARE(p.objects[i].color, s.objects[i].color);
        }
        if (s.family == Family::Relation) QCOMPARE(p.relation, s.relation);
      }
      for (const auto& word : TextVocabulary::split(s.caption()))
        QVERIFY2(std::binary_search(vocabulary.begin(), vocabulary.end(), word), word.c_str());
    }
    for (int f : families) QVERIFY(f > 50);  // every family and background mode is sampled
    for (int m : modes) QVERIFY(m > 50);
  }

  void checker_passes_ground_truth() {
    int passed = 0;
    const int n = 600;
    for (int i = 0; i < n; ++i) {
      const Scene s = sample_scene(500000 + i);
      passed += eval::check_image(render_scene(s), eval::parse_shapes_prompt(s.caption())).passed();
    }
    QVERIFY2(passed >= 0.95 * n, qPrintable(QString("%1 / %2").arg(passed).arg(n)));
  }

  void checker_fails_wrong_images_on_the_right_claim() {
    Scene single;
    single.objects = {{Shape::Circle, ObjectColor::Red, 30, 30, kSmallHalfExtent}};
    QVERIFY(failing(single, "a red circle on a gray background").empty());
    QVERIFY(failing(single, "a small red circle on a gray background").empty());
    QCOMPARE(failing(single, "a large red circle on a gray background"), std::vector<ClaimKind>{ClaimKind::Size});
    const auto wrong_colour = failing(single, "a blue circle on a gray background");
    QVERIFY(wrong_colour.front() == ClaimKind::Object);
    QCOMPARE(failing(single, "a red circle on a teal background"), std::vector<ClaimKind>{ClaimKind::Background});
    QVERIFY(failing(single, "a red square on a gray background").front() == ClaimKind::Object);

    Scene three;
    three.family = Family::Count;
    for (int i = 0; i < 3; ++i) three.objects.push_back({Shape::Star, ObjectColor::Yellow, 12 + 20 * i, 32, kCountHalfExtent});
    QVERIFY(failing(three, "three yellow stars on a gray background").empty());
    QVERIFY(failing(three, "two yellow stars on a gray background").front() == ClaimKind::Count);

    const Scene left = pair({Shape::Square, ObjectColor::Blue, 16, 34, 12}, {Shape::Triangle, ObjectColor::Green, 48, 28, 12},
                            Relation::LeftOf);
    QVERIFY(failing(left, "a blue square left of a green triangle on a gray background").empty());
    QCOMPARE(failing(left, "a blue square right of a green triangle on a gray background"),
             std::vector<ClaimKind>{ClaimKind::Relation});
    QCOMPARE(failing(left, "a green triangle right of a blue square on a gray background").size(), std::size_t(0));
    QCOMPARE(failing(left, "a blue square above a green triangle on a gray background"),
             std::vector<ClaimKind>{ClaimKind::Relation});
    QCOMPARE(failing(left, "a blue square on a gray background"), std::vector<ClaimKind>{ClaimKind::NoExtras});
  }

  void parser_names_the_offending_word() {
    EXPECT_ERROR(eval::parse_shapes_prompt("a red hexagon on a gray background"), "word 3 'hexagon': expected a shape");
    EXPECT_ERROR(eval::parse_shapes_prompt("five red circles on a gray background"), "word 1 'five'");
    EXPECT_ERROR(eval::parse_shapes_prompt("a red circle on a gray"), "'<end>': expected 'background'");
    EXPECT_ERROR(eval::parse_shapes_prompt("a large red circle above a blue star on a gray background"),
                 "no size word in a relation prompt");
    EXPECT_ERROR(eval::read_rgb_image("/nonexistent.png"), "cannot read image '/nonexistent.png'");
  }
};

QTEST_GUILESS_MAIN(TestShapes)
#include "test_shapes.moc"
