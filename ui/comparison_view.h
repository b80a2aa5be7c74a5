// Methods side by side: 2-4 panes, each a method with its own parameters, all on the request of the
// main panel (prompt, seed, sampling). Runs go one after another on a worker thread (so each gets the
// whole CPU and wall times stay comparable); one scrubber moves every pane to the same step; a table
// gives NFE, τ, wall time, tokens/s and speed-up against `ar` (run as a reference when no pane is ar).
// With repeats > 1 every run is timed that many times, round-robin (all runs once, then again, so drift
// hits every method alike), and the table gives mean ± standard deviation of wall time and speed-up.
// The window's side panels follow the focused pane: the running one during a run, else the one clicked.
// "Open result…" shows a `bench` / `sweep` result file (table, speed-quality chart, sweep grid) in a window.
#pragma once

#include <QWidget>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "frame_composer.h"
#include "generation_worker.h"
#include "speculum_tools.h"

class QGridLayout;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTimer;

namespace speculum::ui {

class CanvasWidget;
class MethodParamsForm;
class ResultView;
class TimelineBar;

class ComparisonView : public QWidget {
  Q_OBJECT
 public:
  ComparisonView(Engine& engine, std::function<GenerateParams()> base_request, QWidget* parent = nullptr);

  void set_pane_count(int panes);
  int pane_count() const;
  void set_repeats(int repeats);  // 1-10 timed runs per pane
  int repeats() const;
  int focused_pane() const;       // the running pane, else the selected one (click a pane to select it)
  void select_pane(int pane);
  int position() const;           // the scrubber's step
  // Wall times of a run's timed repeats (pane index; pane_count() is the ar reference).
  const std::vector<double>& wall_times(int pane) const { return runs_.at(pane).wall_ms; }
  MethodParamsForm* method_form(int pane);
  void run_all();
  void stop();
  bool running() const { return current_ >= 0; }
  void set_frame_style(const vis::FrameStyle& style);

  const Timeline& timeline(int pane) const;  // pane index; pane_count() is the ar reference
  const Timeline& timeline_or_empty(int pane) const;  // an empty timeline before the pane has run
  QImage render_image();                     // caption, panes and table as one figure
  QString caption() const;                   // prompt, seed, sampling, methods and bundle of the last run
  QString table_text() const;                // the table as aligned plain text, a header row first
  // Shows a bench or sweep result (--json) in the result window; throws speculum::Error naming the problem.
  void open_result(const QString& path);
  ResultView* result_view() const { return result_view_; }

 Q_SIGNALS:
  void all_finished();
  void focus_changed();  // another pane is focused, or the focused pane's shown state changed
  void open_file_requested(const QString& path);  // the "Open result…" button's choice

 private:
  struct Run {
    GenerateParams params;
    Timeline timeline;
    QImage final_image;
    LivePreview preview;
    bool done = false;
    std::vector<double> wall_ms;  // one per finished timed repeat
  };
  void start_next();
  void finish_runs();  // after the last run, a Stop or an error
  void drain_events();
  void show_position(int steps);
  void update_table();

  const Engine& engine_;
  std::function<GenerateParams()> base_request_;
  WorkerThread worker_thread_;
  QTimer* frame_timer_ = nullptr;
  FramePacer frame_pacer_;

  QSpinBox* panes_spin_ = nullptr;
  QSpinBox* repeats_spin_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* stop_ = nullptr;
  QGridLayout* grid_ = nullptr;
  QWidget* panes_area_ = nullptr;
  TimelineBar* scrubber_ = nullptr;
  QTableWidget* table_ = nullptr;
  ResultView* result_view_ = nullptr;

  struct Pane {
    QWidget* box = nullptr;
    MethodParamsForm* method = nullptr;
    CanvasWidget* canvas = nullptr;
    QLabel* summary = nullptr;
  };
  std::vector<Pane> panes_;
  std::vector<Run> runs_;  // one per pane, plus the ar reference when needed
  int current_ = -1;       // run in progress
  int repeat_ = 0;         // its repeat (0: the one whose events are shown)
  int selected_ = 0;       // the pane the side panels follow when nothing runs
  std::vector<GenerateParams> warmups_;  // untimed first runs of methods new to this view, before the timed ones
  std::set<std::string> warmed_up_;
  bool warming_ = false;
  vis::FrameStyle style_;
};

}  // namespace speculum::ui
