// What the window reads and writes: opening traces, PNG requests and bench results (also by drag and drop and the
// recent-files menu), saving traces, the image, animation, video and comparison exports, and automatic saving.
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QRegularExpression>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <algorithm>

#include "canvas_widget.h"
#include "common/png_export.h"
#include "comparison_view.h"
#include "gif_writer.h"
#include "speculum_tools.h"
#include "main_window.h"
#include "request_panel.h"
#include "timeline_bar.h"
#include "video_writer.h"

namespace speculum::ui {
namespace {

constexpr int kMaxRecentFiles = 8;
constexpr int kMaxAnimationFrames = 300;

}  // namespace

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
