#include "main_window.h"
#include "ran_request.h"

#include "draft_tree_panel.h"

#include <algorithm>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QDir>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QAbstractSpinBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLineEdit>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QStyleFactory>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QScreen>
#include <QGuiApplication>
#include <QMouseEvent>
#include <QAbstractItemView>
#include <QUrl>
#include <QVBoxLayout>

#include "canvas_widget.h"
#include "cell_panel.h"
#include "io/input_file.h"
#include "io/limits.h"
#include "history_panel.h"
#include "xy_plot.h"
#include "common/png_export.h"
#include "comparison_view.h"
#include "draft_tree_panel.h"
#include "generation_worker.h"
#include "gif_writer.h"
#include "video_writer.h"
#include "metrics_panel.h"
#include "request_panel.h"
#include "timeline_bar.h"
#include "trace/trace_io.h"

namespace speculum::ui {

namespace {

constexpr int kMaxRecentFiles = 8;
constexpr int kMaxAnimationFrames = 300;

QPalette dark_palette() {
  QPalette p;
  const QColor window(45, 45, 48), base(30, 30, 32), text(230, 230, 230), disabled(130, 130, 130);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::Highlight, QColor(0, 114, 178));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(86, 180, 233));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText}) p.setColor(QPalette::Disabled, role, disabled);
  return p;
}

}  // namespace

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
  request_ = new RequestPanel(*engine_, request_box);
  request_layout->addWidget(request_);
  auto* buttons = new QHBoxLayout;
  generate_ = new QPushButton("Generate", request_box);
  generate_->setToolTip("Generate (Ctrl+Enter)");
  stop_ = new QPushButton("Stop", request_box);
  stop_->setToolTip("Stop within one step (Esc)");
  stop_->setEnabled(false);
  buttons->addWidget(generate_);
  buttons->addWidget(stop_);
  request_layout->addLayout(buttons);
  request_layout->addStretch(1);
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
  status_ = new QLabel(QString::fromStdString(info.target_summary + " on " + info.device), this);
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

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open trace, image or bench result…", QKeySequence::Open, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, "Open", {}, "Traces, images and bench results (*.jsonl *.png *.json);;All files (*)");
    if (!path.isEmpty()) open_file(path);
  });
  recent_menu_ = file->addMenu("Open &recent");
  file->addSeparator();
  file->addAction("&Save trace…", QKeySequence::Save, this, [this] {
    const QString path = save_path("Save trace", "jsonl", "Traces (*.jsonl)");
    if (!path.isEmpty()) save_trace(path);
  });
  file->addAction("&Export image (PNG with parameters)…", QKeySequence("Ctrl+E"), this, [this] {
    const QString path = save_path("Export image", "png", "PNG images (*.png)");
    if (!path.isEmpty()) export_image(path);
  });
  file->addAction("Export &animation (GIF)…", QKeySequence("Ctrl+Shift+E"), this, [this] {
    const QString path = save_path("Export animation", "gif", "GIF animations (*.gif)");
    if (!path.isEmpty()) export_animation(path);
  });
  file->addAction("Export &video (MP4)…", this, [this] {
    const QString path = save_path("Export video", "mp4", "MP4 videos (*.mp4)");
    if (!path.isEmpty()) export_video(path);
  });
  QMenu* scale_menu = file->addMenu("PNG export &scale");
  auto* scales = new QActionGroup(scale_menu);
  for (int scale : {1, 4, 8}) {
    QAction* a = scale_menu->addAction(QString("×%1 (nearest neighbour)").arg(scale));
    a->setCheckable(true);
    a->setChecked(settings_->value("png_scale", 1).toInt() == scale);
    scales->addAction(a);
    connect(a, &QAction::triggered, this, [this, scale] { settings_->setValue("png_scale", scale); });
  }
  QAction* dither = file->addAction("Dither animation colours");
  dither->setCheckable(true);
  dither->setChecked(settings_->value("gif_dither", false).toBool());
  dither->setToolTip("Floyd–Steinberg dithering in GIF exports: smoother gradients, grainier flat areas");
  connect(dither, &QAction::toggled, this, [this](bool on) { settings_->setValue("gif_dither", on); });
  QAction* autosave_action = file->addAction("Save every run &automatically…");
  autosave_action->setCheckable(true);
  autosave_action->setChecked(!settings_->value("autosave_folder").toString().isEmpty());
  autosave_action->setToolTip(settings_->value("autosave_folder").toString());
  connect(autosave_action, &QAction::toggled, this, [this, autosave_action](bool on) {
    QString folder;
    if (on) {
      const QString start = settings_->value("save_folder", QStandardPaths::writableLocation(QStandardPaths::PicturesLocation)).toString();
      folder = QFileDialog::getExistingDirectory(this, "Save every finished run (PNG + trace) into", start);
    }
    set_autosave_folder(folder);
    const QSignalBlocker block(autosave_action);
    autosave_action->setChecked(!folder.isEmpty());
    autosave_action->setToolTip(folder);
    report(folder.isEmpty() ? "Automatic saving is off" : "Every finished run is saved into " + folder);
  });
  file->addAction("Export &comparison…", this, [this] {
    const QString path = save_path("Export comparison", "png", "PNG images (*.png)", "comparison");
    if (!path.isEmpty()) export_comparison(path);
  });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu("&Run");
  run->addAction("&Generate", QKeySequence("Ctrl+Return"), this, &MainWindow::start_generation);
  run->addAction("&X/Y plot…", this, [this] {
    auto* dialog = new XyPlotDialog(*engine_, [this] { return request_->request(); }, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
  });
  run->addAction("&Stop", QKeySequence("Esc"), this, &MainWindow::stop_generation);
  run->addAction("Random &seed", QKeySequence("Ctrl+R"), request_, &RequestPanel::randomize_seed);
  run->addSeparator();
  run->addAction("Step &back", QKeySequence("Left"), timeline_bar_, &TimelineBar::step_back);
  run->addAction("Step &forward", QKeySequence("Right"), timeline_bar_, &TimelineBar::step_forward);
  run->addAction("&Play / pause", QKeySequence("Space"), timeline_bar_, &TimelineBar::toggle_play);
  run->addAction("Run &comparison", QKeySequence("Ctrl+Shift+Return"), this, &MainWindow::run_comparison);

  QMenu* view = menuBar()->addMenu("&View");
  int shortcut = 1;
  for (vis::Layer layer : vis::kAllLayers) {
    QAction* action = view->addAction(vis::layer_name(layer));
    action->setCheckable(true);
    action->setChecked(layer == vis::Layer::TokenState);
    // Ctrl+1…9, then Ctrl+Shift+1… for the layers past the ninth.
    action->setShortcut(QKeySequence(shortcut <= 9 ? QString("Ctrl+%1").arg(shortcut) : QString("Ctrl+Shift+%1").arg(shortcut - 9)));
    ++shortcut;
    connect(action, &QAction::toggled, this, &MainWindow::update_style);
    layer_actions_[layer] = action;
  }
  view->addSeparator();
  smooth_action_ = view->addAction("&Smooth scaling");
  smooth_action_->setCheckable(true);
  connect(smooth_action_, &QAction::toggled, this, &MainWindow::update_style);
  view->addAction("&Reset zoom", QKeySequence("Ctrl+0"), canvas_, &CanvasWidget::reset_view);
  QMenu* theme = view->addMenu("&Theme");
  auto* themes = new QActionGroup(this);
  for (const QString& name : {QString("system"), QString("light"), QString("dark")}) {
    QAction* action = theme->addAction(name);
    action->setCheckable(true);
    action->setData(name);
    themes->addAction(action);
    connect(action, &QAction::triggered, this, [this, name] { apply_theme(name); });
  }
  view->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());

  QMenu* help = menuBar()->addMenu("&Help");
  help->addAction("&Prompt examples", this, [this] {
    hint_->show();
    settings_->setValue("first_run_hint_hidden", false);
  });
  help->addAction("&Glossary", this, [this] {
    auto* box = new QMessageBox(QMessageBox::NoIcon, "Glossary", glossary_html(), QMessageBox::Close, this);
    box->setTextFormat(Qt::RichText);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->show();
  });
}

QString MainWindow::first_run_hint_html(const ModelInfo& info) {
  QString html = "<b>New here?</b> ";
  if (!info.text_conditioned) {
    html += "Pick a class in the request panel and press Generate (Ctrl+Return).";
  } else {
    html += info.free_text ? QString("Type any prompt and press Generate (Ctrl+Return); the model reads its first %1 T5 tokens, and "
                                     "the line under the prompt says what a longer one loses.")
                                 .arg(info.max_prompt_words)
                           : QString("Type a prompt and press Generate (Ctrl+Return); unknown words are flagged as you type.");
    if (!info.prompt_grammar.empty()) html += " Prompts read: " + QString::fromStdString(info.prompt_grammar).toHtmlEscaped();
    if (!info.example_prompts.empty()) {
      QStringList links;
      for (const std::string& example : info.example_prompts) {
        const QString text = QString::fromStdString(example);
        links << QString("<a href=\"prompt:%1\">%2</a>").arg(QString::fromUtf8(QUrl::toPercentEncoding(text)), text.toHtmlEscaped());
      }
      html += "<br>Prompts this model draws well (click one): " + links.join(" · ");
    }
  }
  return html + " <a href=\"hide\">Hide this hint</a> (Help ▸ Prompt examples brings it back)";
}

QString MainWindow::glossary_html() {
  return "<h3>Speculative decoding of image tokens, in words</h3><dl>"
         "<dt><b>target</b></dt><dd>The model whose images we want; every committed token follows its distribution "
         "(exactly for lossless methods, approximately for lossy ones).</dd>"
         "<dt><b>draft</b></dt><dd>A token proposed cheaply ahead of the target — by a small drafter (EAGLE, LISA, "
         "LANTERN), by the target itself (SJD's Jacobi window), by heads on its features (SSD) or by a low-resolution "
         "model (MuLo-SD) — and then checked by the target.</dd>"
         "<dt><b>NFE</b></dt><dd>Number of function evaluations: target forward passes. <code>ar</code> needs one per "
         "token (256 for a 16×16 grid); speculative methods verify many drafts in one pass.</dd>"
         "<dt><b>τ</b></dt><dd>Tokens committed per target forward (tokens / NFE): the mean accepted length plus the bonus "
         "token.</dd>"
         "<dt><b>p, q</b></dt><dd>p: the target's probability of a token at a cell; q: the draft's probability of the "
         "token it proposed.</dd>"
         "<dt><b>acceptance</b></dt><dd>A draft is accepted strictly when u &lt; p/q for a uniform u (this keeps the "
         "target's distribution exactly), or softly when a lossy rule lets it pass (LISA's codebook neighbourhood, LANTERN's "
         "and MuLo-SD's pooled probability of nearby codes). Acceptance rate = accepted / verified drafts.</dd>"
         "<dt><b>residual</b></dt><dd>After a strict rejection the replacement is drawn from max(0, p − q) renormalised, "
         "which is what makes speculative sampling lossless.</dd>"
         "<dt><b>resampled</b></dt><dd>A cell whose draft was rejected and redrawn (from the residual, or from the target).</dd>"
         "<dt><b>frontier</b></dt><dd>SSD: the cells drafted at once in one step — a run along row 0, then whole rows "
         "below the committed ones.</dd>"
         "<dt><b>island</b></dt><dd>MuLo-SD: a connected group of rejected cells and their neighbourhood, redrawn from the "
         "target together.</dd>"
         "<dt><b>entropy</b></dt><dd>How spread the target's distribution is at a cell: flat backgrounds are sharp (low), "
         "textures and object edges are flat (high) — where drafts tend to fail.</dd></dl>";
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

void MainWindow::autosave() {
  const QString folder = settings_->value("autosave_folder").toString();
  if (folder.isEmpty() || final_image_.isNull()) return;
  const QString base = QDir(folder).filePath(file_name_for(last_request_, "png"));
  QString png = base;
  for (int n = 2; QFileInfo::exists(png) || QFileInfo::exists(QString(png).replace(".png", ".jsonl")); ++n)
    png = QString(base).replace(".png", QString("-%1.png").arg(n));  // never over an earlier run's files
  const QString trace = QString(png).replace(QRegularExpression("\\.png$"), ".jsonl");
  const QString status = status_->text();
  if (write_reported(png, [&] { app::write_png(png.toStdString(), final_image_, {{app::kParametersKey, last_request_.to_json()}}); }) &&
      write_reported(trace, [&] { write_trace(trace.toStdString(), timeline_.events()); }))
    status_->setText(status + " · saved " + QFileInfo(png).fileName());
}

void MainWindow::set_autosave_folder(const QString& folder) { settings_->setValue("autosave_folder", folder); }

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

QString MainWindow::suggested_file_name(const QString& extension, const QString& what) const {
  return file_name_for(request_->request(), extension, what);
}

QString MainWindow::file_name_for(const GenerateParams& p, const QString& extension, const QString& what) {
  QString words = QString::fromStdString(p.prompt.empty() ? "class-" + std::to_string(p.class_id) : p.prompt).toLower();
  words.replace(QRegularExpression("[^a-z0-9]+"), "-");
  words = words.left(60);
  while (words.endsWith('-')) words.chop(1);
  return QString("%1%2-seed%3-%4.%5").arg(what.isEmpty() ? "" : what + "-", words.isEmpty() ? "speculum" : words).arg(p.seed)
      .arg(QString::fromStdString(p.method), extension);
}

QString MainWindow::save_path(const QString& title, const QString& extension, const QString& filter, const QString& what) {
  const QString folder = settings_->value("save_folder", QStandardPaths::writableLocation(QStandardPaths::PicturesLocation)).toString();
  const QString path = QFileDialog::getSaveFileName(this, title, QDir(folder).filePath(suggested_file_name(extension, what)), filter);
  if (!path.isEmpty()) settings_->setValue("save_folder", QFileInfo(path).absolutePath());
  return path;
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

void MainWindow::apply_theme(const QString& theme) {
  QApplication::setStyle(QStyleFactory::create("Fusion"));
  if (theme == "dark") QApplication::setPalette(dark_palette());
  else if (theme == "light") QApplication::setPalette(QApplication::style()->standardPalette());
  else QApplication::setPalette(system_palette_);
  settings_->setValue("theme", theme);
  for (QAction* action : findChildren<QAction*>())
    if (action->isCheckable() && action->data().toString() == theme) action->setChecked(true);
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

bool MainWindow::save_trace(const QString& path) {
  if (timeline_.events().empty()) {
    report("Nothing to save: generate or open a run first");
    return false;
  }
  const bool written = write_reported(path, [&] { write_trace(path.toStdString(), timeline_.events()); });
  if (written) remember_file(path);
  return written;
}

bool MainWindow::open_file(const QString& path) {
  try {  // a FIFO would block the window for ever, a device never ends, a huge file fills the memory
    check_input_file(path.toStdString(), limits::kMaxTraceBytes, "file");
  } catch (const std::exception& e) {
    report(QString("Could not open %1: %2").arg(path, QString::fromStdString(user_message(e))));
    return false;
  }
  if (path.endsWith(".json", Qt::CaseInsensitive)) {  // a bench or sweep result, shown beside the comparison; runs go on
    try {
      comparison_->open_result(path);
    } catch (const std::exception& e) {
      report(QString("Could not open %1: %2").arg(path, QString::fromStdString(user_message(e))));
      return false;
    }
    tabs_->setCurrentWidget(comparison_);
    remember_file(path);
    report("Opened the result " + QFileInfo(path).fileName());
    return true;
  }
  if (running_) {
    report("Stop the running generation before opening a file");
    return false;
  }
  try {
    if (path.endsWith(".png", Qt::CaseInsensitive)) {
      const auto text = app::read_png_text(path.toStdString());
      const auto it = text.find(app::kParametersKey);
      if (it == text.end()) throw Error("'" + path.toStdString() + "' has no Speculum parameters (not written by Speculum)");
      const GenerateParams request = GenerateParams::from_json(it->second);
      check_request(request);  // a request no run could have written is refused, not restored half-way
      last_request_ = request;
      request_->apply(last_request_);
      timeline_ = Timeline();
      set_run_contents({});
      final_image_ = QImage(path);
      timeline_bar_->set_step_count(0);
      show_position(0);
      report("Restored the settings of " + QFileInfo(path).fileName() + "; Generate re-runs it");
    } else {
      timeline_ = Timeline(read_trace(path.toStdString()));
      set_run_contents(vis::run_contents(timeline_.events()));
      final_image_ = {};
      if (timeline_.run_begin()) {
        const RunBegin& begin = *timeline_.run_begin();
        if (begin.grid_rows != engine_->info().grid_rows || begin.grid_cols != engine_->info().grid_cols)
          report(QString("The trace's grid is %1x%2, this model's is %3x%4: showing cell states without the image")
                     .arg(begin.grid_rows).arg(begin.grid_cols).arg(engine_->info().grid_rows).arg(engine_->info().grid_cols));
        try {
          const GenerateParams request = GenerateParams::from_json(begin.params_json);
          check_request(request);
          last_request_ = request;
          request_->apply(last_request_);
        } catch (const Error&) {
          // A trace from another tool: replay it without restoring the request.
        }
      }
      const GridState final_grid = timeline_.state_after(timeline_.step_count());
      if (final_grid.rows() == engine_->info().grid_rows && final_grid.committed_count() == final_grid.rows() * final_grid.cols())
        final_image_ = to_qimage(engine_->decode(final_grid.committed_tokens()));
      timeline_bar_->set_step_count(timeline_.step_count());
      timeline_bar_->set_position(timeline_.step_count());
      show_position(timeline_.step_count());
      const int steps = timeline_.step_count();
      report(QString("Opened %1: %2 %3").arg(QFileInfo(path).fileName()).arg(steps).arg(steps == 1 ? "step" : "steps"));
    }
  } catch (const std::exception& e) {
    report(QString("Could not open %1: %2").arg(path, QString::fromStdString(user_message(e))));
    return false;
  }
  tabs_->setCurrentIndex(0);
  remember_file(path);
  return true;
}

bool MainWindow::export_image(const QString& path) {
  // The finished image when there is one (the canvas may show an earlier step of the replay).
  const QImage image = final_image_.isNull() ? canvas_->image() : final_image_;
  if (image.isNull()) {
    report("Nothing to export yet");
    return false;
  }
  // Nearest-neighbour enlargement keeps every pixel a sharp block (a 64x64 image is small on screen).
  const int scale = std::clamp(settings_->value("png_scale", 1).toInt(), 1, 8);
  const QImage scaled = scale == 1 ? image : image.scaled(image.size() * scale, Qt::IgnoreAspectRatio, Qt::FastTransformation);
  return write_reported(path, [&] { app::write_png(path.toStdString(), scaled, {{app::kParametersKey, last_request_.to_json()}}); });
}

std::vector<QImage> MainWindow::animation_frames(QSize size) const {
  const int count = timeline_.step_count();
  vis::FrameStyle style = canvas_->style();
  style.last_step = count - 1;
  const int stride = (count + kMaxAnimationFrames - 1) / kMaxAnimationFrames;
  std::vector<QImage> frames;
  for (int steps = 1; steps <= count; steps += stride) {
    const GridState grid = timeline_.state_after(steps);
    const QImage image = steps == count && !final_image_.isNull() ? final_image_ : preview_image(*engine_, grid);
    frames.push_back(vis::compose_frame(size, image, grid, style, low_res_preview_image(*engine_, grid, style)));
  }
  if ((count - 1) % stride != 0) frames.push_back(vis::compose_frame(size, final_image_, timeline_.state_after(count), style));
  frames.insert(frames.end(), 15, frames.back());  // hold the result for a moment (before a GIF loops)
  return frames;
}

bool MainWindow::export_animation(const QString& path) {
  if (timeline_.step_count() == 0) {
    report("Nothing to animate: generate or open a run first");
    return false;
  }
  const std::vector<QImage> frames = animation_frames(QSize(256, 256));
  return write_reported(path, [&] { write_gif(path, frames, 6, true, settings_->value("gif_dither", false).toBool()); });
}

bool MainWindow::export_video(const QString& path) {
  if (timeline_.step_count() == 0) {
    report("Nothing to animate: generate or open a run first");
    return false;
  }
  const std::vector<QImage> frames = animation_frames(QSize(512, 512));  // video keeps detail GIF's palette cannot
  return write_reported(path, [&] { write_mp4(path, frames, 100.0 / 6); });
}

bool MainWindow::export_comparison(const QString& path) {
  return write_reported(path, [&] {
    app::write_png(path.toStdString(), comparison_->render_image(), {{app::kParametersKey, request_->request().to_json()}});
  });
}

bool MainWindow::write_reported(const QString& path, const std::function<void()>& write) {
  try {
    write();
  } catch (const std::exception& e) {
    report(QString("Could not write %1: %2").arg(path, QString::fromStdString(user_message(e))));
    return false;
  }
  report("Wrote " + path);
  return true;
}

void MainWindow::remember_file(const QString& path) {
  QStringList files = settings_->value("recent_files").toStringList();
  files.removeAll(path);
  files.prepend(path);
  while (files.size() > kMaxRecentFiles) files.removeLast();
  settings_->setValue("recent_files", files);
  rebuild_recent_menu();
}

void MainWindow::rebuild_recent_menu() {
  recent_menu_->clear();
  const QStringList files = settings_->value("recent_files").toStringList();
  for (const QString& path : files) recent_menu_->addAction(QFileInfo(path).fileName(), this, [this, path] { open_file(path); })->setToolTip(path);
  recent_menu_->setEnabled(!files.isEmpty());
}

namespace {

// A window larger than its screen (grown by something huge it showed) is never saved nor restored: every later
// launch would open that large.
bool fits_the_screen(const QWidget& window) {
  const QScreen* screen = window.screen() ? window.screen() : QGuiApplication::primaryScreen();
  if (!screen) return window.width() <= 8192 && window.height() <= 8192;
  const QSize room = screen->availableVirtualSize();
  return window.width() <= room.width() && window.height() <= room.height();
}

}  // namespace

void MainWindow::restore_settings() {
  restoreGeometry(settings_->value("geometry").toByteArray());
  if (!fits_the_screen(*this)) resize(1280, 800);
  restoreState(settings_->value("window_state").toByteArray());
  hint_->setVisible(!settings_->value("first_run_hint_hidden", false).toBool());
  const QString request = settings_->value("request").toString();
  if (!request.isEmpty()) {
    try {
      request_->apply(GenerateParams::from_json(request.toStdString()));
    } catch (const Error&) {
      // Settings from an older version or another model: keep the defaults.
    }
  }
  for (const auto& [layer, action] : layer_actions_)
    action->setChecked(settings_->value("layers/" + vis::layer_key(layer), layer == vis::Layer::TokenState).toBool());
  smooth_action_->setChecked(settings_->value("smooth", false).toBool());
  apply_theme(settings_->value("theme", "system").toString());
  rebuild_recent_menu();
}

void MainWindow::save_settings() {
  if (fits_the_screen(*this)) settings_->setValue("geometry", saveGeometry());
  settings_->setValue("window_state", saveState());
  settings_->setValue("request", QString::fromStdString(request_->request().to_json()));
  for (const auto& [layer, action] : layer_actions_) settings_->setValue("layers/" + vis::layer_key(layer), action->isChecked());
  settings_->setValue("smooth", smooth_action_->isChecked());
  settings_->sync();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  worker_thread_.worker()->cancel();  // the worker sees it within one step; the destructor joins the thread
  comparison_->stop();
  save_settings();
  event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!event->mimeData()->hasUrls()) return;
  const QString path = event->mimeData()->urls().value(0).toLocalFile();
  if (path.endsWith(".png", Qt::CaseInsensitive) || path.endsWith(".jsonl", Qt::CaseInsensitive)) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QString path = event->mimeData()->urls().value(0).toLocalFile();
  if (!path.isEmpty() && open_file(path)) event->acceptProposedAction();
}

}  // namespace speculum::ui
