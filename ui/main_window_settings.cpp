// What persists between launches: window geometry and layout, the last request, overlay layers, the theme and
// recent files, restored at start and saved on close.
#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QGuiApplication>
#include <QLabel>
#include <QScreen>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>

#include "comparison_view.h"
#include "main_window.h"
#include "request_panel.h"

namespace speculum::ui {
namespace {

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

// A window larger than its screen (grown by something huge it showed) is never saved nor restored: every later
// launch would open that large.
bool fits_the_screen(const QWidget& window) {
  const QScreen* screen = window.screen() ? window.screen() : QGuiApplication::primaryScreen();
  if (!screen) return window.width() <= 8192 && window.height() <= 8192;
  const QSize room = screen->availableVirtualSize();
  return window.width() <= room.width() && window.height() <= room.height();
}

}  // namespace

void MainWindow::apply_theme(const QString& theme) {
  QApplication::setStyle(QStyleFactory::create("Fusion"));
  if (theme == "dark") QApplication::setPalette(dark_palette());
  else if (theme == "light") QApplication::setPalette(QApplication::style()->standardPalette());
  else QApplication::setPalette(system_palette_);
  settings_->setValue("theme", theme);
  for (QAction* action : findChildren<QAction*>())
    if (action->isCheckable() && action->data().toString() == theme) action->setChecked(true);
}

void MainWindow::restore_settings() {
  restoreGeometry(settings_->value("geometry").toByteArray());
  if (!fits_the_screen(*this)) resize(1280, 800);
  restoreState(settings_->value("window_state").toByteArray());
  hint_->setVisible(!settings_->value("first_run_hint_hidden", false).toBool());
  const QString request = settings_->value("request").toString();
  if (!request.isEmpty()) {
    try {
      GenerateParams remembered = GenerateParams::from_json(request.toStdString());
      // Sampling left at a bundle's recommendation follows this bundle's (settings older than the flag: the same).
      const bool same_bundle = settings_->value("request_bundle").toString().toStdString() == engine_->info().name;
      if (!same_bundle || settings_->value("request_sampling_recommended", true).toBool())
        remembered.sampling = engine_->info().sampling;
      // Method options chosen on another model start at this one's recommendations instead.
      if (!same_bundle) remembered.method_options.clear();
      request_->apply(remembered);
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
  settings_->setValue("request_bundle", QString::fromStdString(engine_->info().name));
  settings_->setValue("request_sampling_recommended", request_->sampling_is_recommended());
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

}  // namespace speculum::ui
