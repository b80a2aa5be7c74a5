// Auto draft sizes: the candidates a tune tries, how auto resolves (tuned size, else the default; given sizes
// stay), the file's round trip and the errors that name what is wrong in it, a real tune on a tiny bundle (the
// chosen size is the cheapest measured one), and an engine that loads the table and runs the tuned size exactly
// as a request that names it.
#include <cmath>
#include <nlohmann/json.hpp>

#include "decoding/method.h"
#include "io/draft_size_file.h"
#include "speculum.h"
#include "test_helpers.h"

using namespace speculum;

namespace {

const MethodInfo& method_info(const std::string& name) {
  for (const auto& m : available_methods())
    if (m.name == name) return m;
  throw Error("no method " + name);
}

const ParamSpec& param(const std::string& method, const std::string& name) {
  for (const auto& p : method_info(method).params)
    if (p.name == name) return p;
  throw Error("no parameter " + name);
}

DraftSizeTable sjd_table(int chosen) {
  DraftSizeTable t;
  t.key = {"0123456789abcdef", "f32", "cpu", 2, "a test CPU (2 logical cores)"};
  t.bundle_name = "test";
  t.measured_at = "2026-12-02T00:00:00Z";
  t.images = 3;
  t.ar_ms_per_image = 200;
  t.cost_curve = {{1, 0.5}, {2, 0.8}};
  t.methods = {{"sjd", "window", chosen, {{2, 190, 1.5}, {4, 160, 2.2}, {8, 250, 3.1}}}};
  return t;
}

EngineParams tiny_engine(const std::string& draft_sizes_file, int threads = 1) {
  EngineParams p;
  p.bundle_dir = test::bundles_dir() + "/tiny-text";
  p.device = "cpu";
  p.threads = threads;
  p.draft_sizes_file = draft_sizes_file;
  return p;
}

}  // namespace

class TestDraftSizes : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string path(const char* name) const { return dir_.filePath(name).toStdString(); }

 private Q_SLOTS:
  void forward_costs_and_the_roofline_are_measured_as_described() {
    auto engine = Engine::load(tiny_engine(""));
    const int cells = engine->info().grid_rows * engine->info().grid_cols;
    const auto costs = engine->measure_forward_cost({1, 4}, cells / 2, 3);
    QCOMPARE(costs.size(), std::size_t(2));
    QCOMPARE(costs[0].new_tokens, 1);
    QCOMPARE(costs[1].new_tokens, 4);
    for (const auto& c : costs) QVERIFY(std::isfinite(c.ms) && c.ms > 0);
    EXPECT_ERROR(engine->measure_forward_cost({2}, cells - 1, 3), "exceed the " + std::to_string(cells) + "-token grid");
    const StepRoofline roof = engine->measure_step_roofline(3);
    QCOMPARE(roof.step_bytes, std::max<std::int64_t>(engine->info().decode_step_bytes, 1 << 20));
    QVERIFY(roof.step_ms > 0 && roof.read_ms > 0 && std::isfinite(roof.step_over_read) && roof.step_over_read > 0);
    // The memory probe outgrows the last-level cache (twice it) and the step's bytes.
    QVERIFY(roof.memory_probe_bytes >= 2 * roof.last_level_cache_bytes && roof.memory_probe_bytes >= 2 * roof.step_bytes);
    QVERIFY(std::isfinite(roof.memory_gbs) && roof.memory_gbs > 0);
  }

  void every_method_that_drafts_has_one_draft_size() {
    for (const auto& m : available_methods()) {
      int sizes = 0;
      for (const auto& p : m.params) sizes += p.draft_size;
      QCOMPARE(sizes, m.name == "ar" ? 0 : 1);
    }
  }

  void candidates_are_the_minimum_powers_of_two_and_the_default_within_range() {
    QCOMPARE(draft_size_candidates(param("sjd", "window")), (std::vector<int>{2, 4, 8, 16, 32}));
    QCOMPARE(draft_size_candidates(param("eagle", "total_tokens")), (std::vector<int>{1, 2, 4, 8, 12, 16, 32}));
    QCOMPARE(draft_size_candidates(param("ssd", "vertical")), (std::vector<int>{1, 2}));
  }

  void auto_resolves_to_the_tuned_size_else_the_default_and_given_sizes_stay() {
    const DraftSizeTable table = sjd_table(4);
    const MethodInfo& sjd = method_info("sjd");
    QCOMPARE(resolve_draft_sizes(sjd, {}, &table).at("window"), 4.0);
    QCOMPARE(resolve_draft_sizes(sjd, {{"window", kAutoDraftSize}}, &table).at("window"), 4.0);
    QCOMPARE(resolve_draft_sizes(sjd, {{"window", 8}}, &table).at("window"), 8.0);
    QCOMPARE(resolve_draft_sizes(sjd, {}, nullptr).at("window"), 16.0);
    QCOMPARE(resolve_draft_sizes(method_info("eagle"), {}, &table).at("total_tokens"), 12.0);  // not tuned: its default
    QCOMPARE(resolve_draft_sizes(method_info("eagle"), {{"depth", 3}}, &table).at("depth"), 3.0);
  }

  void auto_is_accepted_only_for_draft_sizes() {
    const MethodResources none;
    QVERIFY(make_method("sjd", {{"window", kAutoDraftSize}}, none) != nullptr);  // unresolved: the default
    EXPECT_ERROR(make_method("sjd", {{"window", 1}}, none), "window = 1.000000 is outside [2.000000, 64.000000] or not an integer (0 = auto)");
    EXPECT_ERROR(make_method("sjd", {{"init", -1}}, none), "init = -1");
    const GenerateParams p = GenerateParams::from_json(R"({"method": "sjd", "method_options": {"window": "auto"}})");
    QCOMPARE(p.method_options.at("window"), kAutoDraftSize);
    EXPECT_ERROR(GenerateParams::from_json(R"({"method": "sjd", "method_options": {"window": "big"}})"), "must be a number (or \"auto\"");
  }

  void the_file_round_trips_and_replaces_the_table_of_its_key() {
    const std::string file = path("sizes/round-trip.json");  // the folder is created
    QVERIFY(save_draft_sizes(file, sjd_table(4)).empty());
    DraftSizeTable other = sjd_table(2);
    other.key.threads = 1;
    save_draft_sizes(file, other);
    save_draft_sizes(file, sjd_table(8));  // same key as the first: replaces it
    const auto tables = read_draft_size_file(file);
    QCOMPARE(tables.size(), std::size_t(2));
    QCOMPARE(tables[0].key.threads, 1);
    QCOMPARE(tables[1].methods.at(0).chosen, 8);
    QCOMPARE(tables[1].methods.at(0).trials.size(), std::size_t(3));
    QCOMPARE(tables[1].methods.at(0).trials[1].tokens_per_pass, 2.2);
    QCOMPARE(tables[1].cost_curve.at(1).ms, 0.8);
    QCOMPARE(tables[1].speedup(tables[1].methods[0]), 200.0 / 250);
    QVERIFY(read_draft_size_file(path("no-such-file.json")).empty());
  }

  void errors_name_the_file_and_the_field() {
    const std::string file = path("bad.json");
    const auto with = [&](const std::function<void(nlohmann::json&)>& change) {
      save_draft_sizes(file, sjd_table(4));
      nlohmann::json doc = nlohmann::json::parse(test::read_bytes(file));
      change(doc);
      test::write_bytes(file, doc.dump());
    };
    with([](nlohmann::json& d) { d["format"] = "speculum-draft-sizes/9"; });
    EXPECT_ERROR(read_draft_size_file(file), file + ": format 'speculum-draft-sizes/9' is not speculum-draft-sizes/1");
    with([](nlohmann::json& d) { d["tables"][0]["methods"][0]["method"] = "beam"; });
    EXPECT_ERROR(read_draft_size_file(file), "tables[0].methods[0]: unknown method 'beam'");
    with([](nlohmann::json& d) { d["tables"][0]["methods"][0]["param"] = "init"; });
    EXPECT_ERROR(read_draft_size_file(file), "'init' is not the draft size of method 'sjd'");
    with([](nlohmann::json& d) { d["tables"][0]["methods"][0]["chosen"] = 16; });
    EXPECT_ERROR(read_draft_size_file(file), "the chosen size 16 has no trial");
    with([](nlohmann::json& d) { d["tables"][0]["methods"][0]["trials"][0]["size"] = 1; });
    EXPECT_ERROR(read_draft_size_file(file), "trials[0]: size 1 is outside window's range [2, 64]");
    with([](nlohmann::json& d) { d["tables"][0]["methods"][0]["trials"][2]["ms_per_image"] = -3; });
    EXPECT_ERROR(read_draft_size_file(file), "trials[2]: field 'ms_per_image' must be a number >= 0");
    with([](nlohmann::json& d) { d["tables"][0].erase("key"); });
    EXPECT_ERROR(read_draft_size_file(file), "tables[0]: missing field 'key'");
    test::write_bytes(file, "{\"format\": ");
    EXPECT_ERROR(read_draft_size_file(file), file + ": not valid UTF-8 JSON");
    EXPECT_ERROR(Engine::load(tiny_engine(file)), file + ": not valid UTF-8 JSON");  // an engine says which file
    // A cache that cannot be read is replaced by the next tune, and the note says so.
    const std::string note = save_draft_sizes(file, sjd_table(4));
    QVERIFY2(note.find("replaced an unreadable draft-size file") != std::string::npos, note.c_str());
    QCOMPARE(read_draft_size_file(file).size(), std::size_t(1));
  }

  void a_tune_chooses_the_cheapest_size_and_the_engine_runs_it() {
    auto engine = Engine::load(tiny_engine(""));
    QVERIFY(!engine->info().draft_sizes);
    QCOMPARE(engine->info().draft_size_key.threads, 1);
    QVERIFY(!engine->info().draft_size_key.bundle.empty());
    TuneParams tune;
    tune.methods = {"sjd"};
    tune.images = 2;
    int last_done = 0, last_total = 0;
    Callbacks cb;
    cb.progress = [&](int done, int total) { last_done = done, last_total = total; };
    const DraftSizeTable table = tune_draft_sizes(*engine, tune, cb);
    QCOMPARE(last_done, 2 * 6);  // ar and five windows, two images each
    QCOMPARE(last_total, last_done);
    QVERIFY(table.key == engine->info().draft_size_key);
    QVERIFY(table.ar_ms_per_image > 0);
    QCOMPARE(table.methods.size(), std::size_t(1));
    const MethodTuning& sjd = table.methods[0];
    QCOMPARE(sjd.trials.size(), std::size_t(5));
    for (const auto& t : sjd.trials) {
      QVERIFY(t.ms_per_image > 0);
      QVERIFY(t.tokens_per_pass >= 1);  // every pass commits at least one token
      QVERIFY(sjd.best().ms_per_image <= t.ms_per_image);
    }
    QVERIFY(!table.cost_curve.empty() && table.cost_curve[0].new_tokens == 1);

    // A table whose choice is not the default, so that auto visibly follows it.
    DraftSizeTable pinned = table;
    pinned.methods[0].chosen = 4;
    const std::string file = path("tuned.json");
    save_draft_sizes(file, pinned);
    auto tuned = Engine::load(tiny_engine(file));
    QVERIFY(tuned->info().draft_sizes.has_value());
    GenerateParams request;
    request.prompt = tuned->info().text_vocab.front();
    request.method = "sjd";
    request.seed = 3;
    const GenerateResult automatic = tuned->generate(request);
    QCOMPARE(automatic.method_options.at("window"), 4.0);
    request.method_options["window"] = 4;
    const GenerateResult named = engine->generate(request);
    QCOMPARE(automatic.tokens, named.tokens);
    QCOMPARE(automatic.metrics.nfe, named.metrics.nfe);

    // Another thread count is another key: auto keeps the default there.
    auto other = Engine::load(tiny_engine(file, 2));
    QVERIFY(!other->info().draft_sizes);
    request.method_options.clear();
    QCOMPARE(other->generate(request).method_options.at("window"), 16.0);
  }

  void sizes_that_draw_the_same_images_as_a_smaller_one_are_dropped() {
    auto engine = Engine::load(tiny_engine(""));
    const int rows = engine->info().low_res_rows;
    QVERIFY(rows > 0 && rows < 8);
    TuneParams tune;
    tune.methods = {"mulo"};
    tune.images = 1;
    const DraftSizeTable table = tune_draft_sizes(*engine, tune);
    const MethodTuning& mulo = table.methods.at(0);
    QVERIFY(!mulo.trials.empty());
    // rows_per_cycle past the low-resolution grid's rows drafts the whole grid, exactly as rows_per_cycle = rows
    for (const auto& t : mulo.trials) QVERIFY2(t.size <= rows, qPrintable(QString::number(t.size)));
    QCOMPARE(mulo.chosen, 1);  // larger sizes change what MuLo-SD accepts: auto keeps the studied default
  }

  void auto_never_takes_a_lossy_size_past_its_limit() {
    const std::string file = path("lossy.json");
    DraftSizeTable table = sjd_table(4);
    table.methods.push_back({"mulo", "rows_per_cycle", 8, {{1, 300, 4}, {8, 150, 13}}});
    save_draft_sizes(file, table);
    EXPECT_ERROR(read_draft_size_file(file), "tables[0].methods[1]: the chosen size 8 is past 1, the largest auto may take for 'mulo'");
    QVERIFY(auto_may_choose(param("mulo", "rows_per_cycle"), 1));
    QVERIFY(!auto_may_choose(param("ssd", "vertical"), 2));
    QVERIFY(auto_may_choose(param("sjd", "window"), 64));
  }

  void a_tune_refuses_what_the_bundle_cannot_run() {
    auto engine = Engine::load(tiny_engine(""));
    TuneParams tune;
    tune.methods = {"ar"};
    EXPECT_ERROR(tune_draft_sizes(*engine, tune), "method 'ar' has no draft size to tune");
    tune.methods = {"beam"};
    EXPECT_ERROR(tune_draft_sizes(*engine, tune), "cannot run method 'beam' (it runs: ar,");
    tune.methods = {"sjd"};
    tune.images = 0;
    EXPECT_ERROR(tune_draft_sizes(*engine, tune), "images = 0 is outside [1, 1000]");
    std::atomic<bool> cancel{true};
    tune.images = 1;
    EXPECT_ERROR(tune_draft_sizes(*engine, tune, {}, &cancel), "tune cancelled");
  }
};

QTEST_GUILESS_MAIN(TestDraftSizes)
#include "test_draft_sizes.moc"
