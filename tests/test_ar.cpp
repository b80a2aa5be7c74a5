// The `ar` method end to end through the public engine API: determinism (seeds, thread counts), the
// event stream and its trace, greedy decoding, cancel, previews, and PNGs that reproduce their run.
#include <ATen/Parallel.h>

#include <fstream>

#include "common/png_export.h"
#include "speculum.h"
#include "test_helpers.h"
#include "trace/grid_state.h"
#include "trace/trace_io.h"

using namespace speculum;

class TestAr : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::unique_ptr<Engine> text_;
  std::unique_ptr<Engine> klass_;

  static std::unique_ptr<Engine> load(const std::string& name) {
    EngineParams p;
    p.bundle_dir = test::bundles_dir() + "/" + name;
    p.device = "cpu";
    return Engine::load(p);
  }

  static GenerateParams request(std::uint64_t seed) {
    GenerateParams p;
    p.prompt = "a red circle above a blue square";
    p.seed = seed;
    return p;
  }

 private Q_SLOTS:
  void initTestCase() {
    text_ = load("tiny-text");
    klass_ = load("tiny-class");
  }

  void same_seed_same_tokens_on_one_and_two_threads() {
    at::set_num_threads(1);
    const GenerateResult a = text_->generate(request(11));
    at::set_num_threads(2);
    const GenerateResult b = text_->generate(request(11));
    QCOMPARE(a.tokens, b.tokens);
    QVERIFY(a.image.rgb == b.image.rgb);
    const GenerateResult c = text_->generate(request(12));
    QVERIFY(a.tokens != c.tokens);
    GenerateParams other_prompt = request(11);
    other_prompt.prompt = "four green stars";
    QVERIFY(text_->generate(other_prompt).tokens != a.tokens);
  }

  void metrics_and_events_of_a_full_run() {
    std::vector<Event> events;
    Callbacks cb;
    cb.event = [&](const Event& e) { events.push_back(e); };
    const GenerateResult r = text_->generate(request(3), cb);
    const int cells = 64;
    QVERIFY(!r.cancelled);
    QCOMPARE(r.metrics.tokens, cells);
    QCOMPARE(r.metrics.nfe, cells);
    QCOMPARE(r.metrics.mean_accepted_length(), 1.0);
    QVERIFY(r.metrics.forward_ms > 0 && r.metrics.forward_ms <= r.metrics.wall_ms);
    QVERIFY(std::holds_alternative<RunBegin>(events.front()));
    QVERIFY(std::holds_alternative<RunEnd>(events.back()));
    int commits = 0, step_ends = 0;
    for (const Event& e : events) {
      if (const auto* c = std::get_if<Commit>(&e)) {
        QCOMPARE(c->cells.size(), std::size_t(1));
        QCOMPARE(c->cells[0], (Cell{commits / 8, commits % 8}));  // raster order
        QVERIFY(c->p_of_token[0] > 0 && c->p_of_token[0] <= 1);
        QCOMPARE(c->tokens[0], r.tokens[commits]);
        ++commits;
      }
      if (const auto* s = std::get_if<StepEnd>(&e)) {
        QCOMPARE(s->fwd_passes_step, 1);
        ++step_ends;
      }
    }
    QCOMPARE(commits, cells);
    QCOMPARE(step_ends, cells);
    QCOMPARE(compute_metrics(events).tokens, cells);
  }

  void trace_replays_to_the_same_grid() {
    const std::string path = dir_.path().toStdString() + "/ar.jsonl";
    std::vector<Event> live;
    TraceWriter writer(path);
    Callbacks cb;
    cb.event = [&](const Event& e) {
      live.push_back(e);
      writer.write(e);
    };
    const GenerateResult r = text_->generate(request(5), cb);
    writer.finish();
    const std::vector<Event> replay = read_trace(path);
    QVERIFY(replay == live);
    GridState grid;
    for (const Event& e : replay) grid.apply(e);
    QCOMPARE(grid.committed_tokens(), r.tokens);
    QVERIFY(text_->decode(grid.committed_tokens()).rgb == r.image.rgb);
    const auto begin = std::get<RunBegin>(replay.front());
    QCOMPARE(GenerateParams::from_json(begin.params_json).seed, std::uint64_t(5));
  }

  void top_k_one_is_greedy_and_seed_independent() {
    GenerateParams p = request(1);
    p.sampling.top_k = 1;
    std::vector<float> probabilities;
    Callbacks cb;
    cb.event = [&](const Event& e) {
      if (const auto* c = std::get_if<Commit>(&e)) probabilities.push_back(c->p_of_token[0]);
    };
    const GenerateResult a = text_->generate(p, cb);
    for (float prob : probabilities) QCOMPARE(prob, 1.0f);
    p.seed = 999;
    QCOMPARE(text_->generate(p).tokens, a.tokens);
  }

  void cfg_changes_the_distribution() {
    GenerateParams p = request(4);
    p.sampling.cfg_scale = 1.0f;  // a single stream
    const auto no_cfg = text_->generate(p).tokens;
    p.sampling.cfg_scale = 7.5f;
    QVERIFY(text_->generate(p).tokens != no_cfg);
  }

  void cancel_stops_within_one_step_and_leaves_a_consistent_grid() {
    std::atomic<bool> cancel{false};
    std::vector<Event> events;
    Callbacks cb;
    cb.event = [&](const Event& e) { events.push_back(e); };
    cb.progress = [&](int committed, int) {
      if (committed == 10) cancel = true;
    };
    const GenerateResult r = text_->generate(request(2), cb, &cancel);
    QVERIFY(r.cancelled);
    QCOMPARE(r.metrics.tokens, 10);
    QVERIFY(r.metrics.cancelled);
    QCOMPARE(r.metrics.nfe, 10);
    for (int i = 0; i < 64; ++i) QCOMPARE(r.tokens[i] >= 0, i < 10);
    QCOMPARE(r.image.width, text_->info().image_size);  // a preview of the partial grid
    GridState grid;
    for (const Event& e : events) grid.apply(e);
    QCOMPARE(grid.committed_count(), 10);
    QCOMPARE(grid.committed_tokens(), r.tokens);
    // The engine is usable again afterwards and still deterministic.
    QCOMPARE(text_->generate(request(2)).tokens, text_->generate(request(2)).tokens);
  }

  void previews_arrive_at_the_interval() {
    GenerateParams p = request(6);
    p.preview_every = 16;
    std::vector<int> seen;
    Callbacks cb;
    cb.preview = [&](const Preview& preview) {
      seen.push_back(preview.committed);
      QCOMPARE(preview.image.width, text_->info().image_size);
    };
    text_->generate(p, cb);
    QCOMPARE(seen, (std::vector<int>{16, 32, 48, 64}));
  }

  void class_bundles_take_ids_or_names() {
    GenerateParams p;
    p.class_id = 3;
    const auto by_id = klass_->generate(p).tokens;
    p.class_id = -1;
    p.prompt = klass_->info().classes[3];
    QCOMPARE(klass_->generate(p).tokens, by_id);
    p.prompt = "unicorn";
    EXPECT_ERROR(klass_->generate(p), "'unicorn' is not a class of this bundle");
    p.prompt.clear();
    p.class_id = 10;
    EXPECT_ERROR(klass_->generate(p), "class 10 is outside [0, 10)");
  }

  void bad_requests_are_errors() {
    GenerateParams p = request(0);
    p.method = "warp";
    EXPECT_ERROR(text_->generate(p), "unknown method 'warp' (available: ar, eagle, lantern, lisa, sjd, ssd, mulo)");
    p = request(0);
    p.method_options["gamma"] = 4;
    EXPECT_ERROR(text_->generate(p), "method 'ar' has no parameter 'gamma' (allowed: none)");
    p = request(0);
    p.prompt = "a red circel";
    EXPECT_ERROR(text_->generate(p), "unknown word 'circel' in the prompt; nearest known words: circle");
    QVERIFY(text_->check_prompt("a red circle").empty());
    QVERIFY(text_->check_prompt("a red circel").find("circel") != std::string::npos);
    p = request(0);
    p.class_id = 1;
    EXPECT_ERROR(text_->generate(p), "text-conditioned");
  }

  void png_carries_parameters_that_reproduce_the_run() {
    GenerateParams p = request(21);
    p.sampling.top_k = 50;
    p.sampling.temperature = 0.9f;
    const GenerateResult r = text_->generate(p);
    const std::string path = dir_.path().toStdString() + "/out.png";
    app::write_png(path, r.image, {{app::kParametersKey, p.to_json()}});
    const auto text = app::read_png_text(path);
    const GenerateParams restored = GenerateParams::from_json(text.at(app::kParametersKey));
    QCOMPARE(restored.to_json(), p.to_json());
    QCOMPARE(text_->generate(restored).tokens, r.tokens);
    EXPECT_ERROR(GenerateParams::from_json(R"({"seed": -3})"), "field 'seed' must be a non-negative integer");
    // A request read back is checked where it is read: what no run could have written is refused, naming the field.
    EXPECT_ERROR(GenerateParams::from_json(R"({"top_p": 2})"), "generation parameters: top-p must be in (0, 1], got 2");
    EXPECT_ERROR(GenerateParams::from_json(R"({"cfg": -1})"), "generation parameters: cfg must be in [0, 100]");
    EXPECT_ERROR(GenerateParams::from_json(R"({"temperature": -0.5})"), "temperature must be in [0, 100]");
    EXPECT_ERROR(GenerateParams::from_json(R"({"class_id": -7})"), "field 'class_id' must be -1 (none) or a class id >= 0");
    EXPECT_ERROR(GenerateParams::from_json(R"({"method": ""})"), "the method '' is empty");
    EXPECT_ERROR(GenerateParams::from_json("{\"method\": \"" + std::string(300, 'x') + "\"}"), "longer than 256 characters");
    EXPECT_ERROR(GenerateParams::from_json(R"({"method": "sjd", "method_options": [1, 2]})"), "'method_options' must be an object");
    EXPECT_ERROR(check_request(GenerateParams::from_json(R"({"method": "beam"})")), "unknown method 'beam' (available: ar,");
    EXPECT_ERROR(check_request(GenerateParams::from_json(R"({"method": "sjd", "method_options": {"window": 900}})")),
                 "window = 900.000000 is outside [2.000000, 64.000000]");
    EXPECT_ERROR(check_request(GenerateParams::from_json(R"({"method": "ar", "method_options": {"depth": 3}})")),
                 "method 'ar' has no parameter 'depth'");
    check_request(restored);  // what a run wrote passes
    EXPECT_ERROR(app::read_png_text(dir_.path().toStdString() + "/missing.png"), "cannot read image '");
    EXPECT_ERROR(app::read_png_text(dir_.path().toStdString() + "/missing.png"), "missing.png': no such file");
    {
      std::ofstream(dir_.path().toStdString() + "/not-a.png") << "text, not a PNG";
      EXPECT_ERROR(app::read_png_text(dir_.path().toStdString() + "/not-a.png"), "not a readable image");
    }
  }

  void shipped_bundle_loads_and_generates_a_full_grid() {
    EngineParams params;
    params.bundle_dir = test::shipped_bundle_dir();
    params.device = "cpu";
    const auto engine = Engine::load(params);
    const ModelInfo& info = engine->info();
    QVERIFY(info.text_conditioned);
    QCOMPARE(info.grid_rows, 16);
    QCOMPARE(info.grid_cols, 16);
    QCOMPARE(info.image_size, 64);
    GenerateParams request;
    request.prompt = "a red circle above a blue square on a gray background";
    request.seed = 9;
    const GenerateResult result = engine->generate(request);
    QCOMPARE(result.tokens.size(), std::size_t(256));
    for (int t : result.tokens) QVERIFY(t >= 0 && t < info.vocab_size);
    QCOMPARE(result.image.width, 64);
    QCOMPARE(result.image.rgb.size(), std::size_t(64 * 64 * 3));
    QCOMPARE(result.metrics.nfe, 256);
    // An unknown word is a clear error naming it and the nearest known words.
    request.prompt = "a red circel";
    QVERIFY(test::throws_error_containing([&] { engine->generate(request); }, "unknown word 'circel'"));
    QVERIFY(engine->check_prompt("a red circel").find("circle") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestAr)
#include "test_ar.moc"
