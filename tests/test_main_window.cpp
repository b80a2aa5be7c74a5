// The minimal studio window under the offscreen platform: a real generation on a worker thread, Stop,
// and closing mid-run.
#include <QSignalSpy>

#include "main_window.h"
#include "test_helpers.h"

using namespace speculum;

class TestMainWindow : public QObject {
  Q_OBJECT

  static std::unique_ptr<Engine> engine() {
    EngineParams p;
    p.bundle_dir = test::bundles_dir() + "/tiny-text";
    p.device = "cpu";
    p.threads = 1;
    return Engine::load(p);
  }

 private Q_SLOTS:
  void generates_to_completion() {
    ui::MainWindow window(engine());
    window.set_prompt("a red circle");
    QSignalSpy finished(&window, &ui::MainWindow::generation_finished);
    window.start_generation();
    QVERIFY(window.running());
    QVERIFY(finished.wait(20000));
    QCOMPARE(finished.at(0).at(0).toBool(), false);  // not cancelled
    QVERIFY(!window.running());
  }

  void stop_cancels_and_window_stays_usable() {
    ui::MainWindow window(engine());
    QSignalSpy finished(&window, &ui::MainWindow::generation_finished);
    for (int i = 0; i < 20; ++i) {
      window.start_generation();
      window.stop_generation();
      QVERIFY(finished.wait(20000));
    }
    QCOMPARE(finished.count(), 20);
  }

  void closing_mid_run_joins_the_worker() {
    auto* window = new ui::MainWindow(engine());
    window->start_generation();
    QTest::qWait(5);
    delete window;  // must cancel and join without hanging or crashing
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
