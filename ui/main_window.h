// The studio window: request controls (left), the canvas with overlay layers, legend and replay
// scrubber (centre, "Generate" tab), the comparison view ("Compare" tab), live metrics and the
// step explanation (right). The engine runs on a worker thread; events are drained and painted at
// display rate. Settings, layout and recent files persist in QSettings.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <functional>
#include <memory>

#include "frame_composer.h"
#include "generation_worker.h"
#include "speculum_tools.h"

class QAction;
class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QSettings;
class QTabWidget;
class QTextBrowser;
class QTimer;

namespace speculum::ui {

class CanvasWidget;
class CellPanel;
class HistoryPanel;
class ComparisonView;
class MetricsPanel;
class RequestPanel;
class TimelineBar;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // `settings_file` empty: the user's settings; tests pass a temporary file.
  explicit MainWindow(std::unique_ptr<Engine> engine, const QString& settings_file = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  void set_prompt(const QString& prompt);
  void set_seed(int seed);
  bool set_method(const QString& method);  // false when this bundle cannot run it
  void start_generation();  // a batch of request_panel()->batch_size() runs, consecutive seeds
  void stop_generation();
  void run_comparison();  // shows the Compare tab and runs its panes
  void apply_theme(const QString& theme);  // "system" | "light" | "dark"
  void set_layers(const QStringList& keys);  // layer keys (vis::layer_key); the others are hidden
  bool running() const { return running_; }
  // Text fields take some shortcuts for themselves (QLineEdit: Ctrl+E is "end of line"); the window's menu
  // shortcuts win over them, and Esc closes an open completion popup before it stops a run.
  bool eventFilter(QObject* watched, QEvent* event) override;
  // The last generation's wall time as the user sees it: from Generate to the final image on the canvas.
  double last_run_ms() const { return last_run_ms_; }
  double last_run_window_cpu_ms() const { return last_run_window_cpu_ms_; }  // the window's thread, while the worker ran

  // Files. Each throws nothing: problems are reported in the status bar and returned as false.
  bool open_file(const QString& path);  // a trace (.jsonl), a PNG written by Speculum, or a bench result (.json)
  bool save_trace(const QString& path);
  bool export_image(const QString& path);
  bool export_animation(const QString& path);  // GIF
  bool export_video(const QString& path);      // MP4, twice the GIF's size
  bool export_comparison(const QString& path);

  const Timeline& timeline() const { return timeline_; }
  CanvasWidget* canvas() const { return canvas_; }
  CellPanel* cell_panel() const { return cell_panel_; }
  TimelineBar* timeline_bar() const { return timeline_bar_; }
  ComparisonView* comparison() const { return comparison_; }
  RequestPanel* request_panel() const { return request_; }
  const QImage& final_image() const { return final_image_; }
  QString status_text() const;
  static QString glossary_html();  // Help > Glossary: the words the views use
  // "a-red-circle-seed3-lisa.png": how save dialogs and automatic saving name a run's files.
  static QString file_name_for(const GenerateParams& request, const QString& extension, const QString& what = {});
  // Every finished run is saved (PNG with its request + trace) into this folder; empty turns it off.
  void set_autosave_folder(const QString& folder);
  HistoryPanel* history() const { return history_; }
  void reopen_from_history(int index);
  // The hint above the canvas until hidden: how to prompt, and the bundle's measured example prompts as links.
  static QString first_run_hint_html(const ModelInfo& info);
  // Save dialogs start in the folder last saved to (else Pictures) with a name from the prompt, seed and method,
  // e.g. "a-red-circle-seed3-lisa.png".
  QString suggested_file_name(const QString& extension, const QString& what = {}) const;

 Q_SIGNALS:
  void generation_finished(bool cancelled);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void build_menus();
  std::vector<QImage> animation_frames(QSize size) const;  // one per step (at most 300), then the result held
  QWidget* build_generate_tab();
  void drain_events();  // at display rate
  void show_position(int steps);
  void update_run_status();  // progress bar and, while running, the status line
  QString run_progress(const Timeline& timeline) const;  // "step 12 · 80/256 tokens · NFE 12 · ETA 1.4 s"
  void show_side_panels(const Timeline& timeline, int steps, bool live);  // metrics, explanation, draft tree
  void follow_comparison();
  void set_running(bool running);
  void start_run();  // one run of the current request
  void run_finished(bool cancelled);  // history, automatic saving, the batch's next seed
  void autosave();
  void update_style();
  void update_legend();
  void set_run_contents(const vis::RunContents& contents);
  void remember_file(const QString& path);
  void rebuild_recent_menu();
  void report(const QString& message);
  bool prompt_missing_reported();
  QString save_path(const QString& title, const QString& extension, const QString& filter, const QString& what = {});  // true (and the status asks for a prompt) when the prompt field is empty
  bool write_reported(const QString& path, const std::function<void()>& write);  // status: wrote / could not write
  void restore_settings();
  void save_settings();

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<QSettings> settings_;
  WorkerThread worker_thread_;
  Timeline timeline_;
  QImage final_image_;   // the finished run's image (or the opened PNG)
  LivePreview live_preview_;
  FramePacer frame_pacer_;
  GenerateParams last_request_;
  bool running_ = false;
  vis::RunContents run_contents_;  // what the current run has shown: the legend lists only that
  QElapsedTimer run_clock_;
  double last_run_ms_ = 0;
  double last_run_window_cpu_ms_ = 0;
  double run_start_window_cpu_ms_ = 0;

  RequestPanel* request_ = nullptr;
  QPushButton* generate_ = nullptr;
  QPushButton* stop_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  CanvasWidget* canvas_ = nullptr;
  QLabel* legend_ = nullptr;
  QLabel* hint_ = nullptr;
  TimelineBar* timeline_bar_ = nullptr;
  ComparisonView* comparison_ = nullptr;
  MetricsPanel* metrics_ = nullptr;
  QTextBrowser* explanation_ = nullptr;
  class DraftTreePanel* draft_tree_ = nullptr;
  class CellPanel* cell_panel_ = nullptr;
  HistoryPanel* history_ = nullptr;
  int batch_left_ = 0;  // runs of the current batch still to start
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* hover_ = nullptr;
  QTimer* frame_timer_ = nullptr;
  std::map<vis::Layer, QAction*> layer_actions_;
  QAction* smooth_action_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QPalette system_palette_;
};

}  // namespace speculum::ui
