// The window's menus (File, Run, View, Help) and the help texts they show: the first-run hint and the glossary.
#include <QActionGroup>
#include <QDockWidget>
#include <QFileDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>
#include <QUrl>

#include "canvas_widget.h"
#include "main_window.h"
#include "request_panel.h"
#include "timeline_bar.h"
#include "xy_plot.h"

namespace speculum::ui {

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

}  // namespace speculum::ui
