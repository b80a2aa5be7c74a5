// The studio's X/Y plot (AUTOMATIC1111's): the current request over one or two axes — seed, cfg, temperature,
// top_k, top_p, method, or a parameter of the request's method — one image per pair of values, composed into
// one labelled grid with NFE and time under each image (app/common/xy_grid.h), shown and saved as a PNG.
// Runs go one after another on the dialog's own worker thread.
#pragma once

#include <QDialog>
#include <QImage>
#include <functional>
#include <vector>

#include "common/xy_grid.h"
#include "generation_worker.h"
#include "speculum.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace speculum::ui {


struct XyAxis {
  QString name;       // empty: no axis
  QStringList values;
};

// The axis names for `method`: the request's fields, then the method's own parameters.
QStringList xy_axis_names(const std::string& method);
// "1, 2, 3" or "1-4" (whole numbers) or "ar, sjd" -> values; empty entries dropped.
QStringList parse_axis_values(const QString& text);
// The requests of the plot, row by row (y outer, x inner). Throws speculum::Error naming the axis and value
// that cannot apply (unknown axis, a value that is not a number in the field's range, a method not listed).
std::vector<GenerateParams> xy_requests(const GenerateParams& base, const XyAxis& x, const XyAxis& y,
                                        const std::vector<std::string>& runnable_methods);

class XyPlotDialog : public QDialog {
  Q_OBJECT
 public:
  XyPlotDialog(Engine& engine, std::function<GenerateParams()> base_request, QWidget* parent = nullptr);

  void set_axes(const XyAxis& x, const XyAxis& y);
  bool run();  // false (with the reason shown) when the axes do not apply
  bool running() const { return next_ >= 0; }
  const QImage& grid_image() const { return grid_; }
  bool save(const QString& path);  // PNG with the base request in its parameters chunk

 Q_SIGNALS:
  void finished();

 private:
  void start_next();
  void show_grid();

  Engine& engine_;
  std::function<GenerateParams()> base_request_;
  WorkerThread worker_thread_;
  QComboBox* x_name_ = nullptr;
  QLineEdit* x_values_ = nullptr;
  QComboBox* y_name_ = nullptr;
  QLineEdit* y_values_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* save_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* picture_ = nullptr;

  GenerateParams base_;
  XyAxis x_, y_;
  std::vector<GenerateParams> requests_;
  app::XyGrid plot_;
  int next_ = -1;  // the request running; -1 when idle
  QImage grid_;
};

}  // namespace speculum::ui
