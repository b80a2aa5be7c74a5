// The studio window under the offscreen platform: real generations with `ar` on the shipped bundle on
// a worker thread, Stop, rapid start/stop, closing mid-run, trace save + replay (bit-exact image),
// PNG settings round trip, GIF export, and the comparison view.
#include <QImageReader>
#include <opencv2/videoio.hpp>
#include <QSignalSpy>

#include "canvas_widget.h"
#include "common/png_export.h"
#include "cell_panel.h"
#include "comparison_view.h"
#include "frame_composer.h"
#include "gif_writer.h"
#include "history_panel.h"
#include "video_writer.h"
#include "xy_plot.h"
#include "main_window.h"
#include "method_params_form.h"
#include "metrics_panel.h"
#include "pacer.h"
#include "request_panel.h"
#include "result_view.h"
#include "trace/bench_records.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QDeadlineTimer>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QPushButton>
#include <QUrl>
#include <QAbstractItemView>
#include <fstream>
#include <nlohmann/json.hpp>
#include "test_helpers.h"
#include "timeline_bar.h"
#include "trace/trace_io.h"

using namespace speculum;

class TestMainWindow : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  static std::unique_ptr<Engine> engine(const std::string& bundle = test::shipped_bundle_dir()) {
    EngineParams p;
    p.bundle_dir = bundle;
    p.device = "cpu";
    p.threads = 1;
    return Engine::load(p);
  }
  QString path(const QString& name) const { return dir_.filePath(name); }
  std::unique_ptr<ui::MainWindow> window() {
    return std::make_unique<ui::MainWindow>(engine(), path("settings.ini"));
  }
  static void generate(ui::MainWindow& w) {
    QSignalSpy finished(&w, &ui::MainWindow::generation_finished);
    w.start_generation();
    QVERIFY(w.running());
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.at(0).at(0).toBool(), false);  // not cancelled
  }

 private Q_SLOTS:
  void generates_on_the_shipped_bundle_and_the_canvas_matches_the_trace() {
    auto w = window();
    w->set_prompt("a red circle above a blue square on a gray background");
    w->set_seed(5);
    generate(*w);
    QVERIFY(!w->running());
    const int cells = w->canvas()->grid().rows() * w->canvas()->grid().cols();
    QCOMPARE(cells, 256);
    QCOMPARE(w->canvas()->grid().committed_count(), cells);
    QVERIFY(!w->final_image().isNull());
    QVERIFY(w->status_text().startsWith("Done: 256 tokens, NFE 256"));

    QVERIFY(w->save_trace(path("run.jsonl")));
    GridState from_trace;
    for (const Event& e : read_trace(path("run.jsonl").toStdString())) from_trace.apply(e);
    QCOMPARE(w->canvas()->grid().committed_count(), from_trace.committed_count());
    QCOMPARE(w->canvas()->grid().committed_tokens(), from_trace.committed_tokens());
    QCOMPARE(w->timeline_bar()->step_count(), 256);
    // The legends list only what ar can show: no draft states, and "no drafts" for the acceptance layer.
    w->set_layers({"token_state", "acceptance"});
    const QString legend = w->findChild<QLabel*>("legend")->text();
    QVERIFY2(!legend.contains("drafted") && !legend.contains("soft-accepted") && !legend.contains("rejected"), qPrintable(legend));
    QVERIFY2(legend.contains("not committed") && legend.contains("no drafts in this run"), qPrintable(legend));
  }

  // MuLo-SD's inset is decoded only while its layer shows, and appears when the layer is switched on later.
  void low_res_inset_follows_its_layer() {
    auto w = window();
    w->set_prompt("a red circle above a blue square");
    w->request_panel()->apply([&] {
      GenerateParams p = w->request_panel()->request();
      p.method = "mulo";
      return p;
    }());
    generate(*w);
    QVERIFY(w->canvas()->low_res_image().isNull());  // the layer is off by default
    w->set_layers({"token_state", "low_res"});
    QCOMPARE(w->canvas()->low_res_image().size(), QSize(32, 32));  // the 8x8 grid's picture
    w->timeline_bar()->set_position(3);
    QVERIFY(!w->canvas()->low_res_image().isNull());
    w->set_layers({"token_state"});
    QVERIFY(w->canvas()->low_res_image().isNull());
  }

  void replaying_a_saved_trace_reproduces_the_image_bit_for_bit() {
    auto w = window();
    w->set_prompt("two green stars on a striped beige background");
    w->set_seed(11);
    generate(*w);
    const QImage generated = w->final_image().convertToFormat(QImage::Format_RGB888);
    QVERIFY(w->save_trace(path("replay.jsonl")));

    auto replay = window();
    QVERIFY(replay->open_file(path("replay.jsonl")));
    QCOMPARE(replay->status_text(), QString("Opened replay.jsonl: 256 steps"));  // ar: one step per token
    QCOMPARE(replay->canvas()->image().convertToFormat(QImage::Format_RGB888), generated);
    // The request came back with the trace.
    QCOMPARE(replay->request_panel()->request().seed, std::uint64_t(11));
    QCOMPARE(replay->request_panel()->request().prompt, std::string("two green stars on a striped beige background"));
    // Scrub back: fewer committed cells, in raster order for ar; then forward to the end again.
    replay->timeline_bar()->set_position(100);
    QCOMPARE(replay->canvas()->grid().committed_count(), 100);
    QCOMPARE(replay->canvas()->grid().at(6, 3).state, CellState::Committed);  // cell 99
    QCOMPARE(replay->canvas()->grid().at(6, 4).state, CellState::Empty);      // cell 100
    replay->timeline_bar()->step_back();
    QCOMPARE(replay->canvas()->grid().committed_count(), 99);
    replay->timeline_bar()->set_position(replay->timeline_bar()->step_count());
    QCOMPARE(replay->canvas()->image().convertToFormat(QImage::Format_RGB888), generated);
  }

  void stop_mid_run_leaves_a_consistent_partial_state() {
    auto w = window();
    QSignalSpy finished(w.get(), &ui::MainWindow::generation_finished);
    // An empty prompt asks for one instead of drawing the placeholder's example.
    w->start_generation();
    QVERIFY(!w->running());
    QVERIFY2(w->status_text().startsWith("Type a prompt first, for example: "), qPrintable(w->status_text()));
    w->set_prompt("a green square");
    // A run of this bundle takes about 0.1 s on a fast machine, a few display frames: the stop can arrive after its
    // last step, and such a run says nothing about stopping. So the stop follows the first frame with 10 steps (not
    // a 50 ms poll), and a run that finished first is followed by another, a few at most.
    bool stopped_mid_run = false;
    for (int attempt = 0; attempt < 5 && !stopped_mid_run; ++attempt) {
      finished.clear();
      w->start_generation();
      QDeadlineTimer deadline(30000);
      while (w->timeline().step_count() < 10 && finished.isEmpty() && !deadline.hasExpired())
        QCoreApplication::processEvents(QEventLoop::AllEvents, 1);
      w->stop_generation();
      QVERIFY(!finished.isEmpty() || finished.wait(30000));
      stopped_mid_run = finished.at(0).at(0).toBool();  // cancelled
    }
    QVERIFY2(stopped_mid_run, "five runs finished before the stop arrived");
    QVERIFY(w->status_text().startsWith("Stopped: "));
    const GridState& grid = w->canvas()->grid();
    const int committed = grid.committed_count();
    QVERIFY(committed >= 10 && committed < 256);
    QCOMPARE(committed, w->timeline().state_after(w->timeline().step_count()).committed_count());
    // ar commits in raster order: exactly the first `committed` cells, no holes.
    const std::vector<int> tokens = grid.committed_tokens();
    for (int i = 0; i < 256; ++i) QCOMPARE(tokens[i] >= 0, i < committed);
    QCOMPARE(w->timeline().metrics_after(w->timeline().step_count()).tokens, committed);
    QVERIFY(w->timeline().metrics_after(w->timeline().step_count()).cancelled);
  }

  void fifty_rapid_start_stop_cycles() {
    auto w = window();
    QSignalSpy finished(w.get(), &ui::MainWindow::generation_finished);
    w->set_prompt("a green square");
    w->start_generation();  // a first cycle lets the window settle (tabified docks lay out their tab bars lazily)
    w->stop_generation();
    QVERIFY(finished.wait(30000));
    const int children_before = w->findChildren<QObject*>().size();
    for (int i = 1; i < 50; ++i) {
      w->start_generation();
      w->stop_generation();
      QVERIFY(finished.wait(30000));
      QVERIFY(!w->running());
    }
    QCOMPARE(finished.count(), 50);
    QCOMPARE(w->findChildren<QObject*>().size(), children_before);  // nothing piles up per run
    generate(*w);  // and it still generates to the end
    QCOMPARE(w->canvas()->grid().committed_count(), 256);
  }

  void closing_mid_run_joins_the_worker() {
    auto* w = new ui::MainWindow(engine(), path("settings.ini"));
    w->set_prompt("a green square");
    w->start_generation();
    QVERIFY(w->running());
    QTest::qWait(20);
    delete w;  // must cancel and join without hanging or crashing
    // The same in the middle of a comparison, whose runs use the window's engine.
    w = new ui::MainWindow(engine(), path("settings.ini"));
    w->set_prompt("a green square");
    w->run_comparison();
    QTRY_VERIFY_WITH_TIMEOUT(w->comparison()->running(), 5000);
    QTest::qWait(50);
    delete w;
  }

  void png_export_carries_the_request_and_restores_it() {
    auto w = window();
    w->set_prompt("a yellow triangle on a teal background");
    w->set_seed(42);
    generate(*w);
    QVERIFY(w->export_image(path("out.png")));
    auto other = window();
    QVERIFY(other->open_file(path("out.png")));
    const GenerateParams restored = other->request_panel()->request();
    QCOMPARE(restored.prompt, std::string("a yellow triangle on a teal background"));
    QCOMPARE(restored.seed, std::uint64_t(42));
    QVERIFY(!other->open_file(path("missing.png")));
    QVERIFY2(other->status_text().contains("missing.png"), qPrintable(other->status_text()));
    // A PNG whose request no run could have written is refused whole: the panel keeps what it had.
    app::write_png(path("bad.png").toStdString(), w->final_image(),
                   {{app::kParametersKey, R"({"prompt": "two red stars", "method": "sjd", "top_p": 1, "method_options": {"window": 900}})"}});
    QVERIFY(!other->open_file(path("bad.png")));
    QVERIFY2(other->status_text().contains("window = 900"), qPrintable(other->status_text()));
    QCOMPARE(other->request_panel()->request().prompt, std::string("a yellow triangle on a teal background"));
    // PNG export at x8: every pixel a sharp 8x8 block.
    const auto scale_action = [&](const QString& text) {
      for (QAction* a : w->findChildren<QAction*>())
        if (a->text() == text) return a;
      return static_cast<QAction*>(nullptr);
    };
    QVERIFY(scale_action("×8 (nearest neighbour)"));
    scale_action("×8 (nearest neighbour)")->trigger();
    QVERIFY(w->export_image(path("out8.png")));
    const QImage big(path("out8.png")), small = w->final_image();
    QCOMPARE(big.size(), small.size() * 8);
    for (const QPoint p : {QPoint(0, 0), QPoint(17, 40), QPoint(63, 63)})
      for (const QPoint d : {QPoint(0, 0), QPoint(7, 7), QPoint(3, 5)})
        QCOMPARE(big.pixel(p * 8 + d), small.pixel(p));
    scale_action("×1 (nearest neighbour)")->trigger();
  }

  void the_method_form_shows_auto_draft_sizes_and_whether_they_beat_ar_here() {
    ui::MethodParamsForm form;
    DraftSizeTable table;
    table.ar_ms_per_image = 200;
    table.measured_at = "2026-12-02T00:00:00Z";
    table.methods = {{"sjd", "window", 8, {{4, 260, 2.0}, {8, 250, 3.0}}}};
    form.set_draft_sizes(table, 2);
    QVERIFY(form.set_method("sjd"));
    QCOMPARE(form.options().at("window"), kAutoDraftSize);  // the request's default is auto
    const auto* note = form.findChild<QLabel*>("draftSizeNote");
    QVERIFY(note && !note->isHidden());
    QVERIFY2(note->text().contains("Slower than ar on this machine") && note->text().contains("0.80× at 8"), qPrintable(note->text()));
    form.set_options({{"window", 4}});
    QCOMPARE(form.options().at("window"), 4.0);
    form.set_options({{"window", kAutoDraftSize}});
    QCOMPARE(form.options().at("window"), kAutoDraftSize);
    table.methods[0].trials[1].ms_per_image = 160;
    form.set_draft_sizes(table, 2);
    QVERIFY2(note->text().contains("1.25× ar at window 8"), qPrintable(note->text()));
    table.methods.push_back({"mulo", "rows_per_cycle", 1, {{1, 400, 4.0}, {8, 180, 13.0}}});
    form.set_draft_sizes(table, 2);
    QVERIFY(form.set_method("mulo"));
    QVERIFY2(note->text().contains("rows_per_cycle 8 is 1.11× ar here, but changes what this lossy method draws"), qPrintable(note->text()));
    QVERIFY(form.set_method("eagle"));  // not tuned: no note, and the field says how to measure it
    QVERIFY(note->isHidden());
    form.set_draft_sizes(std::nullopt, 1);
    QVERIFY(form.set_method("sjd"));
    QVERIFY(note->isHidden());
  }

  void the_method_form_starts_at_the_bundles_recommendations() {
    ui::MethodParamsForm form;
    QVERIFY(form.set_method("ssd"));
    form.set_recommended({{"ssd", {{"rounds", 8}}}, {"lantern", {{"delta", 0.05}}}});
    auto* rounds = form.findChild<QSpinBox*>("rounds");
    QVERIFY(rounds);
    QCOMPARE(rounds->value(), 8);
    QVERIFY2(rounds->toolTip().contains("default 8 rounds, this bundle's; the engine's 2 rounds"), qPrintable(rounds->toolTip()));
    // A value the user changed survives another bundle's recommendations; the rest follow them.
    form.findChild<QSpinBox*>("row0_rounds")->setValue(3);
    form.set_recommended({{"ssd", {{"rounds", 4}}}});
    QCOMPARE(form.options().at("rounds"), 4.0);
    QCOMPARE(form.options().at("row0_rounds"), 3.0);
    QVERIFY(form.set_method("lantern"));
    QCOMPARE(form.options().at("delta"), 0.1);  // no longer recommended: the engine's default
    // The shipped bundle's recommendations reach the studio's request panel.
    const auto shipped = engine();
    ui::MainWindow w(engine(), path("recommendations.ini"));
    QVERIFY(w.set_method("ssd"));
    const auto boxes = w.findChildren<QSpinBox*>("rounds");
    QVERIFY(!boxes.empty());
    for (const QSpinBox* box : boxes) QCOMPARE(double(box->value()), shipped->info().method_options.at("ssd").at("rounds"));
  }

  void the_method_form_reads_as_a_person_reads_it() {
    ui::MethodParamsForm form;
    QVERIFY(form.set_method("ssd"));
    // An enumeration is a combo box of its choices, a switch a check box, a count a spin box with its unit; the labels
    // are words, the identifiers stay what options() (and so requests and traces) carry.
    auto* schedule = form.findChild<QComboBox*>("schedule");
    QVERIFY(schedule);
    QCOMPARE(schedule->currentText(), QString("joint"));
    QCOMPARE(schedule->count(), 2);
    auto* early_stop = form.findChild<QCheckBox*>("early_stop");
    QVERIFY(early_stop && early_stop->isChecked());
    auto* rounds = form.findChild<QSpinBox*>("rounds");
    QVERIFY(rounds);
    QCOMPARE(rounds->suffix(), QString(" rounds"));
    rounds->setValue(1);
    QCOMPARE(rounds->suffix(), QString(" round"));
    QStringList labels;
    for (QLabel* label : form.findChildren<QLabel*>()) labels << label->text();
    QVERIFY2(labels.contains("Schedule") && labels.contains("Early stop") && !labels.contains("row0_rounds"),
             qPrintable(labels.join(" | ")));
    schedule->setCurrentIndex(1);
    early_stop->setChecked(false);
    const MethodOptions options = form.options();
    QCOMPARE(options.at("schedule"), 1.0);
    QCOMPARE(options.at("early_stop"), 0.0);
    form.set_options({{"schedule", 0}, {"early_stop", 1}});
    QCOMPARE(schedule->currentText(), QString("joint"));
    QVERIFY(early_stop->isChecked());
    // Every parameter of every method has a label, and an enumeration's range is exactly its choices.
    for (const MethodInfo& m : available_methods())
      for (const ParamSpec& p : m.params) {
        QVERIFY2(!p.label.empty(), p.name.c_str());
        if (!p.choices.empty()) QVERIFY(p.integer && p.min == 0 && p.max + 1 == double(p.choices.size()));
        if (p.toggle) QVERIFY(p.integer && p.min == 0 && p.max == 1 && p.choices.empty());
      }
  }

  void settings_persist_between_windows() {
    {
      auto w = window();
      w->set_prompt("a blue square");
      w->set_seed(1234);
      w->close();
    }
    auto w = window();
    QCOMPARE(w->request_panel()->request().prompt, std::string("a blue square"));
    QVERIFY(w->set_method("lisa"));
    QCOMPARE(w->suggested_file_name("png"), QString("a-blue-square-seed1234-lisa.png"));  // save dialogs' names
    QCOMPARE(w->request_panel()->request().seed, std::uint64_t(1234));
  }

  void remembered_sampling_follows_the_bundle_unless_the_user_chose_it() {
    const QString settings = path("sampling-settings.ini");
    const SamplingParams recommended = engine()->info().sampling;
    GenerateParams chosen;
    chosen.prompt = "a red star";
    chosen.sampling = recommended;
    chosen.sampling.cfg_scale = recommended.cfg_scale + 2.5f;
    {
      auto w = ui::MainWindow(engine(), settings);
      w.request_panel()->apply(chosen);
      QVERIFY(!w.request_panel()->sampling_is_recommended());
      w.close();
    }
    {  // a choice the user made is kept
      auto w = ui::MainWindow(engine(), settings);
      QCOMPARE(w.request_panel()->request().sampling.cfg_scale, chosen.sampling.cfg_scale);
      chosen.sampling = recommended;
      w.request_panel()->apply(chosen);
      QVERIFY(w.request_panel()->sampling_is_recommended());
      w.close();
    }
    {  // sampling left at the recommendation of its time follows the bundle's recommendation now
      QSettings ini(settings, QSettings::IniFormat);
      GenerateParams stale = chosen;
      stale.sampling.cfg_scale = 4;  // an earlier bundle's recommendation
      ini.setValue("request", QString::fromStdString(stale.to_json()));
    }
    auto w = ui::MainWindow(engine(), settings);
    QCOMPARE(w.request_panel()->request().prompt, std::string("a red star"));
    QCOMPARE(w.request_panel()->request().sampling.cfg_scale, recommended.cfg_scale);
    QVERIFY(w.request_panel()->sampling_is_recommended());
  }

  void remembered_method_options_stay_with_their_bundle() {
    const QString settings = path("method-settings.ini");
    {
      auto w = ui::MainWindow(engine(), settings);
      GenerateParams chosen = w.request_panel()->request();
      chosen.method = "ssd";
      chosen.method_options = {{"rounds", 3}};
      w.request_panel()->apply(chosen);
      w.close();
    }
    {  // on the same bundle the user's choice is kept
      auto w = ui::MainWindow(engine(), settings);
      QCOMPARE(w.request_panel()->request().method_options.at("rounds"), 3.0);
      w.close();
    }
    {  // chosen on another model: the method is kept, its options start at this bundle's recommendations
      QSettings ini(settings, QSettings::IniFormat);
      ini.setValue("request_bundle", "another-model");
    }
    auto w = ui::MainWindow(engine(), settings);
    QCOMPARE(w.request_panel()->request().method, std::string("ssd"));
    QCOMPARE(w.request_panel()->request().method_options.at("rounds"), engine()->info().method_options.at("ssd").at("rounds"));
  }

  void gif_export_has_one_frame_per_step_plus_a_hold() {
    auto w = ui::MainWindow(engine(test::bundles_dir() + "/tiny-text"), path("tiny-settings.ini"));
    const auto words = w.request_panel()->example_prompt();  // the tiny bundle's own words
    w.set_prompt(words);
    generate(w);  // tiny bundle: 8x8 grid, 64 steps
    QVERIFY(w.export_animation(path("run.gif")));
    QImageReader reader(path("run.gif"));
    QCOMPARE(reader.imageCount(), 64 + 15);
    const QImage first = reader.read();
    QCOMPARE(first.size(), QSize(256, 256));
  }

  // A window grown past its screen (by something huge it showed) is neither saved nor restored that large.
  void an_oversized_window_is_not_remembered() {
    const QString settings = path("geometry-settings.ini");
    {
      auto w = ui::MainWindow(engine(test::bundles_dir() + "/tiny-text"), settings);
      w.show();
      w.resize(30000, 30000);
      w.close();
    }
    auto again = ui::MainWindow(engine(test::bundles_dir() + "/tiny-text"), settings);
    again.show();
    QVERIFY2(again.width() < 30000 && again.height() < 30000, qPrintable(QString("%1x%2").arg(again.width()).arg(again.height())));
  }

  // A batch runs consecutive seeds; each run lands in the history (newest first) and, with automatic saving on,
  // as a PNG + trace named after prompt, seed and method, never over an earlier file; a history entry reopens its run.
  void a_batch_fills_the_history_and_is_saved_automatically() {
    auto w = ui::MainWindow(engine(test::bundles_dir() + "/tiny-text"), path("batch-settings.ini"));
    const QString folder = path("outputs");
    QDir().mkpath(folder);
    w.set_autosave_folder(folder);
    w.set_prompt(w.request_panel()->example_prompt());
    w.set_seed(5);
    w.request_panel()->set_batch_size(3);
    QSignalSpy finished(&w, &ui::MainWindow::generation_finished);
    w.start_generation();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 60000);
    QTRY_VERIFY(!w.running());
    QCOMPARE(w.history()->count(), 3);
    QCOMPARE(w.history()->run(0).params.seed, std::uint64_t(7));
    QCOMPARE(w.history()->run(2).params.seed, std::uint64_t(5));
    const QString name = ui::MainWindow::file_name_for(w.history()->run(2).params, "png");
    QVERIFY2(name.endsWith("-seed5-ar.png"), qPrintable(name));
    for (int seed : {5, 6, 7}) {
      const QString png = QDir(folder).filePath(ui::MainWindow::file_name_for(w.history()->run(7 - seed).params, "png"));
      QVERIFY2(QFileInfo::exists(png), qPrintable(png));
      QVERIFY(QFileInfo::exists(QString(png).replace(".png", ".jsonl")));
    }
    // The same seed again: a second file, the first untouched.
    const QString first = QDir(folder).filePath(name);
    const QByteArray before = [&] { QFile f(first); f.open(QIODevice::ReadOnly); return f.readAll(); }();
    w.set_seed(5);
    w.request_panel()->set_batch_size(1);
    w.start_generation();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 4, 60000);
    QVERIFY(QFileInfo::exists(QString(first).replace(".png", "-2.png")));
    QVERIFY(QFileInfo::exists(QString(first).replace(".png", "-2.jsonl")));
    QCOMPARE([&] { QFile f(first); f.open(QIODevice::ReadOnly); return f.readAll(); }(), before);
    // Reopening the seed-6 run restores its request, replay and image.
    w.reopen_from_history(2);
    QCOMPARE(w.request_panel()->request().seed, std::uint64_t(6));
    QCOMPARE(w.timeline().state_after(w.timeline().step_count()).committed_tokens(),
             w.history()->run(2).timeline.state_after(w.history()->run(2).timeline.step_count()).committed_tokens());
    QCOMPARE(w.final_image(), w.history()->run(2).image);
  }

  // X/Y plot: requests over two axes (the method axis applied first, so a method parameter reaches it), errors
  // naming the axis and value, and a run that composes one labelled image per pair.
  void xy_plot_runs_every_pair_of_axis_values() {
    GenerateParams base;
    base.prompt = "red";
    base.method = "sjd";
    const std::vector<std::string> runnable = {"ar", "sjd"};
    QCOMPARE(ui::parse_axis_values("0-2, 5,  ,x"), (QStringList{"0", "1", "2", "5", "x"}));
    auto requests = ui::xy_requests(base, {"seed", {"1", "2"}}, {"cfg", {"1", "3"}}, runnable);
    QCOMPARE(requests.size(), std::size_t(4));
    QCOMPARE(requests[1].seed, std::uint64_t(2));
    QCOMPARE(requests[1].sampling.cfg_scale, 1.0f);
    QCOMPARE(requests[2].sampling.cfg_scale, 3.0f);
    requests = ui::xy_requests(base, {"window", {"4", "8"}}, {"method", {"sjd"}}, runnable);
    QCOMPARE(requests[1].method_options.at("window"), 8.0);
    EXPECT_ERROR(ui::xy_requests(base, {"window", {"4"}}, {"method", {"ar"}}, runnable), "'window' is not an axis for method 'ar' (allowed: seed");
    EXPECT_ERROR(ui::xy_requests(base, {"cfg", {"lots"}}, {}, runnable), "axis 'cfg': 'lots' is not a number from 0 to 100");
    EXPECT_ERROR(ui::xy_requests(base, {"method", {"mulo"}}, {}, runnable), "this bundle cannot run 'mulo'");
    EXPECT_ERROR(ui::xy_requests(base, {"seed", ui::parse_axis_values("0-40")}, {"cfg", {"1", "2"}}, runnable), "at most 64 images");

    const auto tiny = engine(test::bundles_dir() + "/tiny-text");
    GenerateParams request;
    request.prompt = tiny->info().text_vocab.at(1);
    ui::XyPlotDialog dialog(*tiny, [&] { return request; });
    dialog.set_axes({"seed", {"0", "1"}}, {"method", {"ar", "sjd"}});
    QSignalSpy finished(&dialog, &ui::XyPlotDialog::finished);
    QVERIFY(dialog.run());
    QVERIFY(finished.wait(60000));
    QVERIFY(dialog.grid_image().width() > 2 * 148 && dialog.grid_image().height() > 2 * 148);
    QVERIFY(dialog.save(path("xy.png")));
    QCOMPARE(QImage(path("xy.png")).size(), dialog.grid_image().size());
  }

  // The MP4 has the GIF's frames at twice the size, readable by FFmpeg, its last frame the composed result;
  // a failed export names the file and leaves neither a partial file nor a damaged old one.
  void video_export_reads_back_frame_for_frame() {
    auto w = ui::MainWindow(engine(test::bundles_dir() + "/tiny-text"), path("tiny-settings.ini"));
    w.set_prompt(w.request_panel()->example_prompt());
    generate(w);
    QVERIFY(w.export_video(path("run.mp4")));
    cv::VideoCapture video(path("run.mp4").toStdString(), cv::CAP_FFMPEG);
    QVERIFY(video.isOpened());
    cv::Mat frame, last;
    int frames = 0;
    while (video.read(frame)) {
      QCOMPARE(frame.cols, 512);
      QCOMPARE(frame.rows, 512);
      last = frame.clone();
      ++frames;
    }
    QCOMPARE(frames, 64 + 15);
    const QImage expected = vis::compose_frame(QSize(512, 512), w.final_image(), w.timeline().state_after(64), w.canvas()->style())
                                .convertToFormat(QImage::Format_BGR888);
    double difference = 0;
    for (int y = 0; y < 512; ++y)
      for (int x = 0; x < 512 * 3; ++x) difference += std::abs(int(last.at<cv::Vec3b>(y, x / 3)[x % 3]) - int(expected.constScanLine(y)[x]));
    difference /= 512.0 * 512 * 3;
    QVERIFY2(difference < 8, qPrintable(QString("mean difference %1 levels").arg(difference)));

    test::write_bytes(path("old.mp4").toStdString(), "old");
    QVERIFY_THROWS_EXCEPTION(Error, ui::write_mp4(path("old.mp4"), {QImage(511, 512, QImage::Format_RGB32)}, 10));
    QVERIFY(!w.export_video(path("no/such/dir/run.mp4")));
    QVERIFY(w.status_text().contains("no/such/dir/run.mp4"));
    QCOMPARE(test::read_bytes(path("old.mp4").toStdString()), std::string("old"));
    QVERIFY(QDir(dir_.path()).entryList({"*.partial*"}).isEmpty());
  }

  void gif_writer_round_trips_palette_colours() {
    std::vector<QImage> frames;
    for (QRgb colour : {qRgb(255, 0, 0), qRgb(0, 0, 255), qRgb(123, 45, 67)}) {
      QImage frame(40, 30, QImage::Format_RGB32);
      frame.fill(colour);
      frame.setPixel(3, 4, qRgb(0, 255, 0));
      frames.push_back(frame);
    }
    // At most 256 colours: kept exactly (a fixed 6x6x6 cube would turn (123, 45, 67) into (102, 51, 51)).
    ui::write_gif(path("colours.gif"), frames, 10);
    QImageReader reader(path("colours.gif"));
    QCOMPARE(reader.imageCount(), 3);
    QImage third = reader.read();
    third = reader.read();
    third = reader.read();
    QCOMPARE(third.size(), QSize(40, 30));
    QCOMPARE(QColor(third.pixel(0, 0)), QColor(123, 45, 67));
    QCOMPARE(QColor(third.pixel(3, 4)), QColor(0, 255, 0));
    // More: median cut over all frames. A smooth gradient of 4,096 colours stays within a few levels (at best 4 on
    // average with 16 colours per palette entry; the old 6x6x6 cube: about 12.7).
    QImage gradient(64, 64, QImage::Format_RGB32);
    for (int y = 0; y < 64; ++y)
      for (int x = 0; x < 64; ++x) gradient.setPixel(x, y, qRgb(x * 4, y * 4, 128));
    QCOMPARE(ui::gif_palette({gradient}).size(), std::size_t(256));
    for (bool dither : {false, true}) {
      ui::write_gif(path("gradient.gif"), {gradient, gradient}, 10, true, dither);
      QImageReader back(path("gradient.gif"));
      QCOMPARE(back.imageCount(), 2);
      const QImage image = back.read().convertToFormat(QImage::Format_RGB32);
      double error = 0;
      for (int y = 0; y < 64; ++y)
        for (int x = 0; x < 64; ++x) error += std::abs(qRed(image.pixel(x, y)) - x * 4) + std::abs(qGreen(image.pixel(x, y)) - y * 4);
      error /= 2 * 64 * 64;
      QVERIFY2(error < (dither ? 7 : 4.5), qPrintable(QString("dither %1: mean error %2").arg(dither).arg(error)));
    }
    QVERIFY_THROWS_EXCEPTION(Error, ui::write_gif(path("no/such/dir/x.gif"), frames, 10));
  }

  void comparison_runs_each_pane_and_an_ar_reference() {
    auto w = window();
    w->show();
    ui::ComparisonView* view = w->comparison();
    view->set_pane_count(3);
    QCOMPARE(view->pane_count(), 3);
    // New panes start with the bundle's methods in order; here: ar, then sjd twice.
    QCOMPARE(view->method_form(0)->method(), QString("ar"));
    view->method_form(1)->set_method("sjd");
    view->method_form(2)->set_method("sjd");
    QSignalSpy done(view, &ui::ComparisonView::all_finished);
    w->set_prompt("a red circle above a blue square");
    w->set_seed(7);
    w->run_comparison();
    QVERIFY(done.wait(120000));
    // Same request and seed: the two sjd panes commit the same tokens, in fewer steps than ar's 256.
    const auto tokens = [&](int pane) { return view->timeline(pane).state_after(view->timeline(pane).step_count()).committed_tokens(); };
    QCOMPARE(tokens(1), tokens(2));
    QCOMPARE(view->timeline(0).step_count(), 256);
    QVERIFY(view->timeline(1).step_count() < 256);
    for (int t : tokens(0)) QVERIFY(t >= 0);
    // Every pane ends on its final image: identical tokens, identical pixels.
    const auto pane_image = [&](int pane) { return view->findChildren<ui::CanvasWidget*>().at(pane)->image(); };
    QVERIFY(!pane_image(0).isNull());
    QCOMPARE(pane_image(1), pane_image(2));
    // The table names the reference and shows every row without scrolling.
    auto* table = view->findChild<QTableWidget*>();
    QCOMPARE(table->rowCount(), 3);
    QCOMPARE(table->item(0, 0)->text(), QString("ar (reference)"));
    QCOMPARE(table->item(0, 5)->text(), QString("1.00×"));
    QVERIFY(table->viewport()->height() >= table->rowViewportPosition(2) + table->rowHeight(2));
    const QImage picture = view->render_image();
    QVERIFY(picture.width() > 300 && picture.height() > 300);
    QCOMPARE(view->caption(), QString("\"a red circle above a blue square\", seed 7 · cfg=1.5 temperature=1 top_k=0 top_p=1 · ar | sjd init=0 window=16 | sjd init=0 window=16 · speculum-shapes"));
    QVERIFY(picture.height() > view->findChild<QTableWidget*>()->height() + 256);  // the caption is drawn above
    QVERIFY(w->export_comparison(path("comparison.png")));
    QVERIFY(QImage(path("comparison.png")).size() == picture.size());
  }

  // Repeats time every run round-robin and the table gives mean ± sd; the side panels follow the focused pane.
  void comparison_repeats_and_side_panels_follow_the_selected_pane() {
    auto w = window();
    w->show();
    ui::ComparisonView* view = w->comparison();
    view->set_pane_count(2);
    view->method_form(0)->set_method("ar");
    view->method_form(1)->set_method("sjd");
    view->set_repeats(3);
    QSignalSpy done(view, &ui::ComparisonView::all_finished);
    w->set_prompt("a blue circle");
    w->set_seed(2);
    w->run_comparison();
    QVERIFY(done.wait(180000));
    QCOMPARE(view->wall_times(0).size(), std::size_t(3));
    QCOMPARE(view->wall_times(1).size(), std::size_t(3));
    auto* table = view->findChild<QTableWidget*>();
    QVERIFY2(table->item(1, 3)->text().contains(" ± "), qPrintable(table->item(1, 3)->text()));
    QCOMPARE(table->item(0, 5)->text(), QString("1.00× ± 0.00"));
    QCOMPARE(view->timeline(0).step_count(), 256);  // repeats do not add to the shown run
    auto* explanation = w->findChild<QTextBrowser*>("explanation");
    auto* metrics = w->findChild<ui::MetricsPanel*>();
    const int sjd_steps = view->timeline(1).step_count();
    view->select_pane(1);
    QVERIFY2(metrics->summary_text().startsWith("<b>sjd</b>"), qPrintable(metrics->summary_text()));
    QVERIFY2(explanation->toPlainText().startsWith(QString("Step %1 of %1.").arg(sjd_steps)), qPrintable(explanation->toPlainText()));
    view->select_pane(0);
    QVERIFY(metrics->summary_text().startsWith("<b>ar</b>"));
    // Back on the Generate tab the panels show that tab's run again.
    w->findChild<QTabWidget*>()->setCurrentIndex(0);
    QVERIFY(!metrics->summary_text().startsWith("<b>sjd</b>"));
  }

  void a_sweep_result_opens_with_its_table_chart_and_grid() {
    BenchRun run;
    run.bundle = "b";
    run.machine = "m";
    run.threads = 1;
    run.methods = {"ar", "lantern delta=0.1", "lantern delta=0.2"};
    run.prompts = {"a red circle", "a blue square"};
    run.seeds = 1;
    run.grid = "grid.png";
    for (int prompt = 0; prompt < 2; ++prompt)
      for (int m = 0; m < 3; ++m) {
        BenchImage i;
        i.method = run.methods[static_cast<std::size_t>(m)];
        i.prompt_index = prompt;
        i.tokens = 256, i.nfe = 256 / (m + 1), i.wall_ms = 100.0 / (m + 1), i.checked = 1, i.passed = prompt == 0 || m == 0;
        run.images.push_back(i);
      }
    QImage(40, 30, QImage::Format_RGB32).save(path("grid.png"));
    std::ofstream(path("sweep.json").toStdString()) << bench_run_to_json(run).dump();
    auto w = window();
    QVERIFY(w->open_file(path("sweep.json")));
    ui::ResultView* view = w->comparison()->result_view();
    QVERIFY(view && view->isVisible());
    QCOMPARE(view->table()->rowCount(), 3);
    QCOMPARE(view->table()->item(2, 0)->text(), QString("lantern delta=0.2"));
    QCOMPARE(view->table()->item(2, 3)->text(), QString("3.01"));            // τ: 2 x 256 tokens in 2 x 85 forwards
    QCOMPARE(view->table()->item(1, 7)->text(), QString("50.0 % (1/2)"));  // checker
    QVERIFY(view->has_chart() && view->has_grid());
    // A broken result names the file and field, and the window keeps working.
    std::ofstream(path("broken.json").toStdString()) << R"({"format": "speculum-bench/1", "bundle": 3})";
    QVERIFY(!w->open_file(path("broken.json")));
    QVERIFY2(w->status_text().contains("broken.json: field 'bundle' has the wrong type"), qPrintable(w->status_text()));
  }

  void window_shortcuts_work_from_a_focused_text_field() {
    auto w = window();
    w->show();
    QApplication::setActiveWindow(w.get());
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    auto* prompt = w->request_panel()->findChild<QLineEdit*>();
    QVERIFY(prompt);
    // A text field that claims Ctrl+E as QLineEdit does under X11's key bindings ("end of line"; the offscreen
    // platform does not bind it), so that the test reproduces the swallowed shortcut on every platform.
    struct X11LineEdit : QLineEdit {
      using QLineEdit::QLineEdit;
      bool event(QEvent* e) override {
        if (e->type() == QEvent::ShortcutOverride && static_cast<QKeyEvent*>(e)->keyCombination() == QKeyCombination(Qt::ControlModifier, Qt::Key_E)) {
          e->accept();
          return true;
        }
        return QLineEdit::event(e);
      }
    };
    auto* field = new X11LineEdit(w->request_panel());
    field->show();
    field->setFocus();
    QAction* export_image = nullptr;
    for (QAction* a : w->findChildren<QAction*>())
      if (a->shortcut() == QKeySequence("Ctrl+E")) export_image = a;
    QVERIFY(export_image);
    QSignalSpy triggered(export_image, &QAction::triggered);
    // The action opens a file dialog; close it as soon as it shows.
    QTimer::singleShot(300, [] {
      if (QWidget* dialog = QApplication::activeModalWidget()) dialog->close();
    });
    QTest::keyClick(field, Qt::Key_E, Qt::ControlModifier);
    QCOMPARE(triggered.count(), 1);
    // Esc with the completion popup open closes the popup and leaves a run alone.
    w->set_prompt("a red circle");
    w->start_generation();
    QVERIFY(w->running());
    prompt->setFocus();
    prompt->end(false);
    QTest::keyClicks(prompt, " ab");
    QCompleter* completer = prompt->completer();
    QVERIFY(completer);
    completer->complete();
    QVERIFY(completer->popup()->isVisible());
    QTest::keyClick(completer->popup(), Qt::Key_Escape);
    QVERIFY(!completer->popup()->isVisible());
    QVERIFY(w->running());
    // A click outside the open popup closes it and still reaches what was clicked (here: Stop).
    completer->complete();
    QVERIFY(completer->popup()->isVisible());
    QPushButton* stop = nullptr;
    for (QPushButton* b : w->findChildren<QPushButton*>())
      if (b->text() == "Stop" && b->isEnabled() && w->isAncestorOf(b) && b->window() == w.get()) stop = b;
    QVERIFY(stop);
    QSignalSpy stop_clicked(stop, &QPushButton::clicked);
    const QPoint at = completer->popup()->mapFromGlobal(stop->mapToGlobal(stop->rect().center()));
    QVERIFY(!completer->popup()->rect().contains(at));
    QTest::mouseClick(completer->popup(), Qt::LeftButton, {}, at);
    QVERIFY(!completer->popup()->isVisible());
    QCOMPARE(stop_clicked.count(), 1);
    w->stop_generation();
    QSignalSpy finished(w.get(), &ui::MainWindow::generation_finished);
    QVERIFY(finished.wait(30000) || !w->running());
  }

  // During a run the status line, the scrubber, the metrics summary and the step explanation name the same step
  // at every frame the window shows.
  void step_counters_agree_at_every_frame() {
    auto w = window();
    w->show();
    w->set_prompt("a red circle above a blue square");
    auto* metrics = w->findChild<ui::MetricsPanel*>();
    auto* explanation = w->findChild<QTextBrowser*>("explanation");
    QVERIFY(metrics && explanation);
    const auto first_number = [](const QString& text, const QString& pattern) {
      const QRegularExpressionMatch m = QRegularExpression(pattern).match(text);
      return m.hasMatch() ? m.captured(1).toInt() : -1;
    };
    for (const char* method : {"ar", "sjd", "mulo"}) {
      QVERIFY(w->set_method(method));
      int frames = 0;
      // A run of this bundle can end within a few display frames on a fast machine: more runs, a few at most.
      for (int attempt = 0; attempt < 5 && frames <= 3; ++attempt) {
        w->start_generation();
        while (w->running()) {
          QTest::qWait(7);
          if (!w->running() || w->timeline().step_count() == 0) continue;
          const int bar = w->timeline_bar()->position();
          QCOMPARE(w->timeline_bar()->step_count(), bar);  // following the run
          QCOMPARE(first_number(w->status_text(), "^step (\\d+) "), bar);
          QCOMPARE(first_number(metrics->summary_text(), "step (\\d+)/"), bar);
          QCOMPARE(first_number(metrics->summary_text(), "step \\d+/(\\d+)"), bar);
          QCOMPARE(first_number(explanation->toPlainText(), "^Step (\\d+) of"), bar);
          QCOMPARE(first_number(explanation->toPlainText(), "^Step \\d+ of (\\d+)"), bar);
          ++frames;
        }
      }
      QVERIFY2(frames > 3, qPrintable(QString("%1: %2 frames").arg(method).arg(frames)));
    }
  }

  // Display work beside a run is paced by what it costs: at most max_share of the time, never more often than the
  // minimum interval.
  void pacers_hold_display_work_to_its_share() {
    ui::Pacer pacer(100, 0.1);
    QVERIFY(pacer.due());  // never ran
    pacer.ran(50);         // 50 ms of work: next after 500 ms
    QVERIFY(!pacer.due());
    QTest::qWait(150);
    QVERIFY(!pacer.due());
    pacer.reset();
    QVERIFY(pacer.due());
    pacer.ran(1);  // cheap work: the minimum interval rules
    QVERIFY(!pacer.due());
    QTest::qWait(130);
    QVERIFY(pacer.due());

    ui::FramePacer frames;
    frames.start();
    QVERIFY(frames.next_frame());
    const double busy_until = ui::thread_cpu_ms() + 20;  // 20 ms of this thread's CPU since that frame
    while (ui::thread_cpu_ms() < busy_until) {
    }
    QTest::qWait(40);
    QVERIFY(frames.next_frame());   // past 33 ms: due, and it sees the 20 ms spent since the last frame
    QVERIFY(!frames.next_frame());  // so the next one waits at least 200 ms
    QTest::qWait(60);
    QVERIFY(!frames.next_frame());
  }

  // While a run grows, the charts' step axis ends at a round number the data grows into; at the end, exactly.
  void live_charts_grow_in_round_steps() {
    auto w = window();
    w->set_prompt("a red circle");
    QVERIFY(w->set_method("ar"));
    QSignalSpy finished(w.get(), &ui::MainWindow::generation_finished);
    w->start_generation();
    QVERIFY(finished.wait(60000));
    const Timeline& run = w->timeline();
    QCOMPARE(run.step_count(), 256);
    ui::MetricsPanel panel;
    panel.show_timeline(run, 37, true);
    QCOMPARE(panel.steps_axis_end(), 500.0);  // 256 steps known so far round up to 500
    panel.show_timeline(run, 37, false);
    QCOMPARE(panel.steps_axis_end(), 256.0);
    QVERIFY(panel.summary_text().contains("step 37/256"));
  }

  void the_glossary_defines_the_words_the_views_use() {
    const QString glossary = ui::MainWindow::glossary_html();
    for (const char* word : {"NFE", "τ", "p, q", "acceptance", "residual", "draft", "frontier", "island", "entropy"})
      QVERIFY2(glossary.contains(QString("<dt><b>%1</b></dt>").arg(word)), word);
    auto w = window();
    QAction* entry = nullptr;
    for (QAction* a : w->findChildren<QAction*>())
      if (a->text() == "&Glossary") entry = a;
    QVERIFY(entry);
  }

  // The first-run hint names the measured examples as links; a click fills the prompt; hiding it is remembered.
  // A T5 bundle takes any text: no vocabulary completion; a prompt past 120 T5 tokens stays runnable with an amber note
  // of what is cut; one past the byte limit is refused.
  void t5_bundles_take_free_text_and_warn_what_is_cut() {
    QTemporaryDir dir;
    RandomBundleParams p;
    p.out_dir = dir.filePath("t5").toStdString();
    p.preset = "tiny";
    p.condition = "t5";
    p.t5_dir = std::string(SPECULUM_TEST_FIXTURES) + "/llamagen-t2i/t5_tiny";
    p.drafters = false;
    create_random_bundle(p);
    const auto engine = Engine::load({p.out_dir, "cpu", 1});
    QVERIFY(engine->info().free_text);
    ui::RequestPanel panel(*engine);
    auto* prompt = panel.findChild<QLineEdit*>();
    QVERIFY(prompt && !prompt->completer());
    QLabel* note = nullptr;
    prompt->setText("a photo of a corgi, any words at all: zyxx");
    QVERIFY(panel.valid());
    QString long_prompt;
    for (int i = 0; i < 20; ++i) long_prompt += "a small red bird sitting on a long green branch ";
    prompt->setText(long_prompt);
    for (QLabel* label : panel.findChildren<QLabel*>())
      if (label->text().contains("so this is cut")) note = label;
    QVERIFY(note && !note->isHidden());
    QVERIFY(panel.valid());
    prompt->setText(QString(2001, 'a'));
    QVERIFY(!panel.valid());
    QVERIFY(ui::MainWindow::first_run_hint_html(engine->info()).contains("Type any prompt"));
  }

  void first_run_hint_offers_the_bundles_examples() {
    ModelInfo info;
    info.text_conditioned = true;
    info.prompt_grammar = "a COLOUR SHAPE on a BACKGROUND background";
    info.example_prompts = {"a red circle on a gray background", "two blue stars on a pink background"};
    info.examples_chosen_by = "the checker";
    const QString html = ui::MainWindow::first_run_hint_html(info);
    QVERIFY(html.contains("Prompts read: a COLOUR SHAPE on a BACKGROUND background"));
    QVERIFY(html.contains("<a href=\"prompt:two%20blue%20stars%20on%20a%20pink%20background\">two blue stars on a pink background</a>"));
    info.text_conditioned = false;
    QVERIFY(ui::MainWindow::first_run_hint_html(info).contains("Pick a class"));

    const QString settings = path("hint-settings.ini");
    {
      auto w = ui::MainWindow(engine(test::bundles_dir() + "/tiny-text"), settings);
      auto* hint = w.findChild<QLabel*>("first_run_hint");
      QVERIFY(hint && !hint->isHidden());
      Q_EMIT hint->linkActivated("prompt:" + QUrl::toPercentEncoding(w.request_panel()->example_prompt()));
      QCOMPARE(QString::fromStdString(w.request_panel()->request().prompt), w.request_panel()->example_prompt());
      Q_EMIT hint->linkActivated("hide");
      QVERIFY(hint->isHidden());
    }
    auto again = ui::MainWindow(engine(test::bundles_dir() + "/tiny-text"), settings);
    QVERIFY(again.findChild<QLabel*>("first_run_hint")->isHidden());
  }

  void hovering_describes_the_cell() {
    GridState grid;
    grid.apply(RunBegin{"test", "{}", 2, 2, 16});
    grid.apply(Draft{0, 0, "tree", {{0, 1}}, {7}, {0.25f}, {}, {}});
    grid.apply(Verify{0, 0, {{0, 1}}, {7}, {0.5f}, {0.25f}, {2.0f}, {0.1f}, {}, {Decision::StrictAccept}});
    grid.apply(Commit{0, {{0, 1}}, {7}, {0.5f}, 0, 1});
    QCOMPARE(ui::CanvasWidget::describe_cell(grid, 0, 1),
             QString("row 0, column 1 · committed · token 7 · p 0.500 · q 0.250 · committed at step 1 · accepted 1/1\n"
                     "draft: token 7, q 0.250"));
    QCOMPARE(ui::CanvasWidget::describe_cell(grid, 1, 0), QString("row 1, column 0 · empty · p — · q —"));
    // MuLo-SD: a rejected seed in island 0, redrawn in the second pass.
    grid.apply(Region{1, "rejected_seed", -1, 0, {{1, 1}}});
    grid.apply(Region{1, "island", 0, 1, {{1, 1}}});
    grid.apply(Resample{2, 1, "target", {{1, 1}}, {3}, {4}, {0.5f}});
    QCOMPARE(ui::CanvasWidget::describe_cell(grid, 1, 1),
             QString("row 1, column 1 · resampled · token 4 · p 0.500 · q — · step 3 · rejected seed · island 0, redrawn in pass 2"));
    ui::CanvasWidget canvas;
    canvas.resize(216, 216);  // image square: 200 px from (8, 8)
    canvas.set_grid(grid);
    QCOMPARE(canvas.cell_at(QPoint(8 + 150, 8 + 20))->col, 1);
    QCOMPARE(canvas.cell_at(QPoint(8 + 150, 8 + 20))->row, 0);
    QVERIFY(!canvas.cell_at(QPoint(2, 2)));  // outside the image
  }

  // A rejected draft beside what the target wanted: the hover text and the cell panel name the draft, the
  // committed token and the target's top candidates with entropy; the panel asks the engine for each patch once.
  void the_cell_panel_shows_the_rejected_draft_beside_the_targets_choices() {
    GridState grid;
    grid.apply(RunBegin{"test", "{}", 1, 2, 16});
    grid.apply(Draft{0, 0, "tree", {{0, 1}}, {9}, {0.6f}, {}, {}});
    grid.apply(Verify{0, 0, {{0, 1}}, {9}, {0.05f}, {0.6f}, {0.08f}, {0.7f}, {}, {Decision::Reject}});
    grid.apply(Resample{0, 0, "residual", {{0, 1}}, {9}, {3}, {0.5f}});
    grid.apply(Commit{0, {{0, 1}}, {3}, {0.5f}, 0, 1, {1.25f}, {3, 4, 9, 1, 0}, {0.4f, 0.3f, 0.05f, 0.05f, 0.05f}});
    QVERIFY(ui::CanvasWidget::describe_cell(grid, 0, 1)
                .endsWith("\ntarget: entropy 1.25 nats · most likely 3 (0.400), 4 (0.300), 9 (0.050), 1 (0.050), 0 (0.050)\n"
                          "draft: token 9, q 0.600"));
    std::vector<int> asked;
    ui::CellPanel panel([&](const std::vector<int>& tokens) {
      asked.insert(asked.end(), tokens.begin(), tokens.end());
      return std::vector<QImage>(tokens.size(), QImage(4, 4, QImage::Format_RGB32));
    });
    panel.resize(420, 300);
    panel.show_cell(0, 1, grid.at(0, 1), grid.vocab_size());
    const QStringList lines = panel.lines();
    QCOMPARE(lines.value(0), QString("Row 0, column 1: committed at step 1"));
    QCOMPARE(lines.value(1), QString("Committed token 3, p 0.500 (drawn from the residual after a rejection)"));
    QCOMPARE(lines.value(2), QString("Draft proposed token 9, q 0.600: replaced"));
    QCOMPARE(lines.value(3), QString("The target's most likely tokens here (entropy 1.25 nats of ln V = 2.77):"));
    QCOMPARE(lines.value(4), QString("1. token 3, p 0.400 ← committed"));
    QCOMPARE(lines.value(6), QString("3. token 9, p 0.050 ← drafted"));
    panel.grab();
    panel.grab();
    std::sort(asked.begin(), asked.end());
    QCOMPARE(asked, (std::vector<int>{0, 1, 3, 4, 9}));  // each patch decoded once
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
