// The window itself: its docks and tabs, running a generation on the worker thread, and showing a run (canvas,
// legend, side panels, status) at display rate. Menus and help texts: main_window_menus.cpp; files:
// main_window_files.cpp; what persists between launches: main_window_settings.cpp.
#include "main_window.h"

#include <QAbstractItemView>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QDockWidget>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "canvas_widget.h"
#include "cell_panel.h"
#include "comparison_view.h"
#include "draft_tree_panel.h"
#include "history_panel.h"
#include "metrics_panel.h"
#include "ran_request.h"
#include "request_panel.h"
#include "timeline_bar.h"
#include "xy_plot.h"

namespace speculum::ui {

MainWindow::MainWindow(std::unique_ptr<Engine> engine, const QString& settings_file, QWidget* parent)
    : QMainWindow(parent), engine_(std::move(engine)), worker_thread_(*engine_) {
  settings_ = settings_file.isEmpty() ? std::make_unique<QSettings>("Speculum", "Speculum studio")
                                      : std::make_unique<QSettings>(settings_file, QSettings::IniFormat);
  system_palette_ = QApplication::palette();
  const ModelInfo& info = engine_->info();
  setWindowTitle(QString("Speculum — %1").arg(QString::fromStdString(info.name)));
  setAcceptDrops(true);
  setDockNestingEnabled(true);

  // Left: the request.
  auto* request_dock = new QDockWidget("Request", this);
  request_dock->setObjectName("request_dock");
  auto* request_box = new QWidget(request_dock);
  auto* request_layout = new QVBoxLayout(request_box);
  // A method with many parameters (ssd has eight) outgrows a short screen: the form scrolls, the buttons stay.
  auto* request_scroll = new QScrollArea(request_box);
  request_scroll->setWidgetResizable(true);
  request_scroll->setFrameShape(QFrame::NoFrame);
  request_ = new RequestPanel(*engine_, request_scroll);
  request_scroll->setWidget(request_);
  request_layout->addWidget(request_scroll, 1);
  auto* buttons = new QHBoxLayout;
  generate_ = new QPushButton("Generate", request_box);
  generate_->setToolTip("Generate (Ctrl+Enter)");
  stop_ = new QPushButton("Stop", request_box);
  stop_->setToolTip("Stop within one step (Esc)");
  stop_->setEnabled(false);
  buttons->addWidget(generate_);
  buttons->addWidget(stop_);
  request_layout->addLayout(buttons);
  request_box->setMinimumWidth(320);
  request_dock->setWidget(request_box);
  addDockWidget(Qt::LeftDockWidgetArea, request_dock);
  connect(generate_, &QPushButton::clicked, this, &MainWindow::start_generation);
  connect(stop_, &QPushButton::clicked, this, &MainWindow::stop_generation);
  connect(request_, &RequestPanel::submitted, this, &MainWindow::start_generation);
  connect(request_, &RequestPanel::validity_changed, this, [this](bool ok) { generate_->setEnabled(ok && !running_); });

  // Centre: generate tab and comparison tab.
  tabs_ = new QTabWidget(this);
  tabs_->addTab(build_generate_tab(), "Generate");
  comparison_ = new ComparisonView(*engine_, [this] { return request_->request(); }, tabs_);
  tabs_->addTab(comparison_, "Compare");
  connect(comparison_, &ComparisonView::open_file_requested, this, &MainWindow::open_file);
  connect(comparison_, &ComparisonView::focus_changed, this, &MainWindow::follow_comparison);
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    if (tabs_->currentWidget() == comparison_) follow_comparison();
    else show_position(timeline_bar_->position());
  });
  setCentralWidget(tabs_);

  // Right: metrics and the step explanation.
  auto* metrics_dock = new QDockWidget("Metrics", this);
  metrics_dock->setObjectName("metrics_dock");
  metrics_ = new MetricsPanel(metrics_dock);
  metrics_dock->setWidget(metrics_);
  addDockWidget(Qt::RightDockWidgetArea, metrics_dock);
  auto* explain_dock = new QDockWidget("What am I looking at", this);
  explain_dock->setObjectName("explain_dock");
  explanation_ = new QTextBrowser(explain_dock);
  explanation_->setObjectName("explanation");
  explanation_->setMinimumHeight(80);
  explain_dock->setWidget(explanation_);
  addDockWidget(Qt::RightDockWidgetArea, explain_dock);
  auto* tree_dock = new QDockWidget("Draft tree", this);
  tree_dock->setObjectName("tree_dock");
  auto* tree_scroll = new QScrollArea(tree_dock);
  draft_tree_ = new DraftTreePanel(tree_scroll);
  tree_scroll->setWidget(draft_tree_);
  tree_dock->setWidget(tree_scroll);
  addDockWidget(Qt::BottomDockWidgetArea, tree_dock);
  auto* cell_dock = new QDockWidget("Cell under the pointer", this);
  cell_dock->setObjectName("cell_dock");
  cell_panel_ = new CellPanel(
      [this](const std::vector<int>& tokens) {
        std::vector<QImage> images;
        for (const Image& patch : engine_->token_patches(tokens)) images.push_back(to_qimage(patch));
        return images;
      },
      cell_dock);
  cell_dock->setWidget(cell_panel_);
  addDockWidget(Qt::BottomDockWidgetArea, cell_dock);
  splitDockWidget(tree_dock, cell_dock, Qt::Horizontal);
  auto* history_dock = new QDockWidget("History", this);
  history_dock->setObjectName("history_dock");
  history_ = new HistoryPanel(history_dock);
  history_dock->setWidget(history_);
  addDockWidget(Qt::BottomDockWidgetArea, history_dock);
  tabifyDockWidget(cell_dock, history_dock);
  cell_dock->raise();
  connect(history_, &HistoryPanel::reopen_requested, this, &MainWindow::reopen_from_history);
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);  // metrics and explanation keep the full height
  resizeDocks({tree_dock, cell_dock}, {170, 170}, Qt::Vertical);  // the canvas keeps most of the height

  progress_ = new QProgressBar(this);
  progress_->setRange(0, info.grid_rows * info.grid_cols);
  progress_->setMaximumWidth(220);
  status_ = new QLabel(QString::fromStdString(info.target_summary + " on " + info.device + ", " + info.weight_format + " weights, " + info.kernels + " kernels"), this);
  hover_ = new QLabel(this);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(hover_);
  statusBar()->addPermanentWidget(progress_);

  qApp->installEventFilter(this);
  connect(worker_thread_.worker(), &GenerationWorker::finished, this, [this](const QImage& image, bool cancelled, const QString& summary) {
    last_run_window_cpu_ms_ = thread_cpu_ms() - run_start_window_cpu_ms_;  // while the worker ran
    final_image_ = image;
    set_running(false);
    drain_events();
    show_position(timeline_bar_->position());
    last_run_ms_ = run_clock_.nsecsElapsed() / 1e6;
    status_->setText((cancelled ? "Stopped: " : "Done: ") + summary);
    run_finished(cancelled);
  });
  connect(worker_thread_.worker(), &GenerationWorker::failed, this, [this](const QString& message) {
    set_running(false);
    drain_events();
    report("Error: " + message);
    batch_left_ = 0;
    Q_EMIT generation_finished(true);
  });

  frame_timer_ = new QTimer(this);
  frame_timer_->setInterval(33);
  connect(frame_timer_, &QTimer::timeout, this, [this] {
    if (frame_pacer_.next_frame()) drain_events();
  });

  build_menus();
  resize(1280, 800);
  restore_settings();
  update_style();
  show_position(0);
}

MainWindow::~MainWindow() {
  // The views with worker threads of their own join them while the engine still exists (children would be
  // deleted only after the members, the engine among them).
  delete comparison_;
  qDeleteAll(findChildren<XyPlotDialog*>());
}

QWidget* MainWindow::build_generate_tab() {
  auto* tab = new QWidget(this);
  auto* layout = new QVBoxLayout(tab);
  hint_ = new QLabel(first_run_hint_html(engine_->info()), tab);
  hint_->setObjectName("first_run_hint");
  hint_->setWordWrap(true);
  hint_->setTextFormat(Qt::RichText);
  hint_->setFrameShape(QFrame::StyledPanel);
  hint_->setMargin(6);
  if (!engine_->info().examples_chosen_by.empty())
    hint_->setToolTip("Examples chosen by measurement: " + QString::fromStdString(engine_->info().examples_chosen_by));
  connect(hint_, &QLabel::linkActivated, this, [this](const QString& link) {
    if (link == "hide") {
      hint_->hide();
      settings_->setValue("first_run_hint_hidden", true);
    } else if (link.startsWith("prompt:")) {
      set_prompt(QUrl::fromPercentEncoding(link.mid(7).toUtf8()));
      request_->focus_prompt();
    }
  });
  layout->addWidget(hint_);
  canvas_ = new CanvasWidget(tab);
  layout->addWidget(canvas_, 1);
  legend_ = new QLabel(tab);
  legend_->setObjectName("legend");
  legend_->setWordWrap(true);
  layout->addWidget(legend_);
  timeline_bar_ = new TimelineBar(tab);
  layout->addWidget(timeline_bar_);
  connect(timeline_bar_, &TimelineBar::position_changed, this, &MainWindow::show_position);
  connect(canvas_, &CanvasWidget::cell_hovered, this, [this](const QString& text) { hover_->setText(text.section('\n', 0, 0)); });
  connect(canvas_, &CanvasWidget::cell_pointed, this, [this](int row, int col) {
    cell_panel_->show_cell(row, col, canvas_->grid().at(row, col), canvas_->grid().vocab_size());
  });
  return tab;
}

void MainWindow::set_prompt(const QString& prompt) {
  GenerateParams p = request_->request();
  p.prompt = prompt.toStdString();
  request_->apply(p);
}

void MainWindow::set_seed(int seed) { request_->set_seed(seed); }

bool MainWindow::set_method(const QString& method) {
  const auto& methods = engine_->info().methods;
  if (std::find(methods.begin(), methods.end(), method.toStdString()) == methods.end()) return false;
  GenerateParams p = request_->request();
  p.method = method.toStdString();
  p.method_options.clear();
  request_->apply(p);
  return true;
}

void MainWindow::start_generation() {
  if (running_ || !request_->valid()) return;
  if (prompt_missing_reported()) return;
  batch_left_ = request_->batch_size() - 1;
  start_run();
}

void MainWindow::run_finished(bool cancelled) {
  if (!cancelled) {
    last_request_ = ran_request(timeline_, last_request_);  // auto draft sizes as they ran
    history_->add({last_request_, timeline_, final_image_});
    autosave();
  }
  if (cancelled) batch_left_ = 0;
  if (batch_left_ > 0) {
    --batch_left_;
    request_->set_seed(static_cast<int>(last_request_.seed + 1));
    QTimer::singleShot(0, this, &MainWindow::start_run);
  }
  Q_EMIT generation_finished(cancelled);
}

void MainWindow::reopen_from_history(int index) {
  if (running_ || index < 0 || index >= history_->count()) return;
  const HistoryPanel::Run& run = history_->run(index);
  request_->apply(run.params);
  last_request_ = run.params;
  timeline_ = run.timeline;
  final_image_ = run.image;
  set_run_contents(vis::run_contents(timeline_.events()));
  tabs_->setCurrentIndex(0);
  timeline_bar_->set_step_count(timeline_.step_count());
  timeline_bar_->set_position(timeline_.step_count());
  show_position(timeline_.step_count());
  status_->setText("Reopened: " + history_->label(index));
}

void MainWindow::start_run() {
  if (running_) return;
  last_request_ = request_->request();
  last_request_.preview_every = 0;  // the window decodes previews itself, off the engine's clock
  timeline_ = Timeline();
  set_run_contents({});
  final_image_ = {};
  live_preview_.reset();
  frame_pacer_.start();
  timeline_bar_->set_step_count(0);
  timeline_bar_->set_position(0);
  canvas_->set_grid({});
  canvas_->set_image({});
  tabs_->setCurrentIndex(0);
  status_->setText(QString::fromStdString("Generating: " + last_request_.to_string()));
  set_running(true);
  run_clock_.start();
  run_start_window_cpu_ms_ = thread_cpu_ms();
  worker_thread_.generate(last_request_);
}

bool MainWindow::prompt_missing_reported() {
  if (!request_->prompt_missing()) return false;
  report("Type a prompt first, for example: " + request_->example_prompt());
  request_->focus_prompt();
  return true;
}

void MainWindow::stop_generation() {
  if (running_) worker_thread_.worker()->cancel();
  comparison_->stop();
}

void MainWindow::run_comparison() {
  if (running_ || prompt_missing_reported()) return;
  tabs_->setCurrentWidget(comparison_);
  comparison_->run_all();
}

void MainWindow::set_running(bool running) {
  running_ = running;
  stop_->setEnabled(running);
  generate_->setEnabled(!running && request_->valid());
  if (running) frame_timer_->start();
  else frame_timer_->stop();
}

void MainWindow::drain_events() {
  const std::vector<Event> events = worker_thread_.worker()->take_events();
  if (events.empty()) return;
  for (const Event& e : events) timeline_.append(e);
  set_run_contents(vis::merged(run_contents_, vis::run_contents(events)));
  const int position = timeline_bar_->position();
  timeline_bar_->set_step_count(timeline_.step_count());  // a following bar moves, and its signal repaints
  if (timeline_bar_->position() != position) return;
  if (position >= timeline_.step_count()) show_position(position);  // events of the step in progress
  else update_run_status();  // the user looks at an earlier step: leave the canvas alone
}

void MainWindow::show_position(int steps) {
  const int count = timeline_.step_count();
  const bool at_end = steps >= count;
  const GridState grid = timeline_.state_after(steps);
  vis::FrameStyle style = canvas_->style();
  style.last_step = std::max(0, count - 1);
  canvas_->set_style(style);
  canvas_->set_grid(grid);
  if (at_end && !running_ && !final_image_.isNull()) canvas_->set_image(final_image_);
  else if (at_end && running_) canvas_->set_image(live_preview_.image_for(*engine_, grid));
  else canvas_->set_image(preview_image(*engine_, grid));
  canvas_->set_low_res_image(low_res_preview_image(*engine_, grid, style));
  if (tabs_->currentWidget() != comparison_) show_side_panels(timeline_, steps, at_end && running_);
  update_run_status();
  update_legend();
}

void MainWindow::show_side_panels(const Timeline& timeline, int steps, bool live) {
  const int count = timeline.step_count();
  metrics_->show_timeline(timeline, steps, live);
  draft_tree_->set_step(steps > 0 ? timeline.events_of_step(std::min(steps, count) - 1) : std::vector<Event>{});
  if (steps <= 0 || count == 0) {
    explanation_->setPlainText(count == 0 ? "Generate, or open a trace, to see the run step by step."
                                          : "Before the first step: the prompt is encoded as the model's prefix and "
                                            "nothing is decoded yet. Step forward (Right) to watch each step.");
  } else {
    const int step = std::min(steps, count);
    explanation_->setPlainText(QString::fromStdString(explain_step(timeline.events_of_step(step - 1), step - 1, count)));
  }
}

// On the Compare tab the side panels, the progress bar and (while it runs) the status line follow the focused pane.
void MainWindow::follow_comparison() {
  if (tabs_->currentWidget() != comparison_ || comparison_->pane_count() == 0) return;
  const int pane = comparison_->focused_pane();
  const Timeline& timeline = comparison_->timeline_or_empty(pane);
  show_side_panels(timeline, comparison_->position(), comparison_->running());
  const RunMetrics& m = timeline.metrics();
  progress_->setValue(m.tokens);
  if (comparison_->running()) status_->setText(QString("Pane %1: ").arg(pane + 1) + run_progress(timeline));
}

void MainWindow::update_run_status() {
  progress_->setValue(timeline_.metrics().tokens);
  if (running_) status_->setText(run_progress(timeline_));
}

QString MainWindow::run_progress(const Timeline& timeline) const {
  const RunMetrics& m = timeline.metrics();
  const int total = engine_->info().grid_rows * engine_->info().grid_cols;
  const double ms_per_token = m.tokens > 0 ? m.wall_ms / m.tokens : 0;
  return QString("step %1 · %2/%3 tokens · NFE %4 · ETA %5 s")
      .arg(timeline.step_count())
      .arg(m.tokens)
      .arg(total)
      .arg(m.nfe)
      .arg((total - m.tokens) * ms_per_token / 1000.0, 0, 'f', 1);
}

void MainWindow::update_style() {
  vis::FrameStyle style = canvas_->style();
  style.layers.clear();
  for (const auto& [layer, action] : layer_actions_)
    if (action->isChecked()) style.layers.insert(layer);
  style.smooth = smooth_action_->isChecked();
  canvas_->set_style(style);
  canvas_->set_low_res_image(low_res_preview_image(*engine_, canvas_->grid(), style));  // the inset appears on toggle
  comparison_->set_frame_style(style);
  update_legend();
}

void MainWindow::set_run_contents(const vis::RunContents& contents) {
  if (contents == run_contents_) return;  // the legend changes only when the run shows something new
  run_contents_ = contents;
  update_legend();
}

void MainWindow::update_legend() {
  const vis::RunContents& seen = run_contents_;
  QString html;
  for (vis::Layer layer : canvas_->style().layers) {
    const auto entries = vis::layer_legend(layer, canvas_->style().last_step, seen);
    if (entries.empty()) continue;
    html += "<b>" + vis::layer_name(layer) + ":</b> ";
    for (const auto& e : entries)
      html += QString("<span style='background-color:%1'>&nbsp;&nbsp;&nbsp;</span>&nbsp;%2&nbsp;&nbsp; ")
                  .arg(QColor(e.color.red(), e.color.green(), e.color.blue()).name(), e.label.toHtmlEscaped());
    html += "<br>";
  }
  const QString text = html.isEmpty() ? "No overlay (View menu, Ctrl+1…9)" : html;
  legend_->setText(text);
}

void MainWindow::set_layers(const QStringList& keys) {
  for (const auto& [layer, action] : layer_actions_) action->setChecked(keys.contains(vis::layer_key(layer)));
}

void MainWindow::report(const QString& message) { status_->setText(message); }

QString MainWindow::status_text() const { return status_->text(); }

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::MouseButtonPress) {
    // A press outside the completion popup closes it; Qt would swallow that press, so the user's click on,
    // say, Generate did nothing. Hand it to the widget under the pointer as the click it was meant to be.
    auto* popup = qobject_cast<QAbstractItemView*>(watched);
    const auto* mouse = static_cast<QMouseEvent*>(event);
    if (!popup || popup != QApplication::activePopupWidget() || popup->rect().contains(mouse->position().toPoint()))
      return QMainWindow::eventFilter(watched, event);
    popup->hide();
    QWidget* target = QApplication::widgetAt(mouse->globalPosition().toPoint());
    if (target && (target == this || isAncestorOf(target))) {
      const QPointF local = target->mapFromGlobal(mouse->globalPosition());
      QMouseEvent press(QEvent::MouseButtonPress, local, mouse->globalPosition(), mouse->button(), mouse->buttons(), mouse->modifiers());
      QMouseEvent release(QEvent::MouseButtonRelease, local, mouse->globalPosition(), mouse->button(), Qt::NoButton, mouse->modifiers());
      QApplication::sendEvent(target, &press);
      QApplication::sendEvent(target, &release);
    }
    return true;
  }
  if (event->type() != QEvent::ShortcutOverride) return QMainWindow::eventFilter(watched, event);
  const auto* key = static_cast<QKeyEvent*>(event);
  const QKeySequence pressed(key->keyCombination());
  if (key->key() == Qt::Key_Escape && QApplication::activePopupWidget()) {
    event->accept();  // the popup's own key press closes it
    return true;
  }
  auto* field = qobject_cast<QWidget*>(watched);
  if (!field || !isAncestorOf(field) || (!qobject_cast<QLineEdit*>(field) && !qobject_cast<QAbstractSpinBox*>(field))) return false;
  for (const QAction* action : findChildren<QAction*>())
    if (action->isEnabled() && action->shortcut() == pressed) return true;  // not overridden: the window's shortcut fires
  return false;
}

}  // namespace speculum::ui
