#include "xy_plot.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>
#include <cmath>

#include "common/png_export.h"

namespace speculum::ui {

namespace {

const QStringList kRequestAxes = {"seed", "cfg", "temperature", "top_k", "top_p", "method"};

double number(const XyAxis& axis, const QString& value, double low, double high, bool whole) {
  bool ok = false;
  const double v = value.toDouble(&ok);
  if (!ok || !std::isfinite(v) || v < low || v > high || (whole && v != std::floor(v)))
    throw Error("X/Y plot: axis '" + axis.name.toStdString() + "': '" + value.toStdString() + "' is not " +
                (whole ? "a whole number" : "a number") + " from " + QString::number(low).toStdString() + " to " +
                QString::number(high).toStdString());
  return v;
}

void apply(GenerateParams& p, const XyAxis& axis, const QString& value, const std::vector<std::string>& runnable) {
  const std::string name = axis.name.toStdString();
  if (name == "seed") {
    p.seed = static_cast<std::uint64_t>(number(axis, value, 0, 2147483647, true));
  } else if (name == "cfg") {
    p.sampling.cfg_scale = static_cast<float>(number(axis, value, 0, 100, false));
  } else if (name == "temperature") {
    p.sampling.temperature = static_cast<float>(number(axis, value, 0, 10, false));
  } else if (name == "top_k") {
    p.sampling.top_k = static_cast<int>(number(axis, value, 0, 1000000, true));
  } else if (name == "top_p") {
    p.sampling.top_p = static_cast<float>(number(axis, value, 1e-6, 1, false));
  } else if (name == "method") {
    if (std::find(runnable.begin(), runnable.end(), value.toStdString()) == runnable.end())
      throw Error("X/Y plot: axis 'method': this bundle cannot run '" + value.toStdString() + "'");
    p.method = value.toStdString();
    p.method_options.clear();
  } else {
    for (const MethodInfo& m : available_methods())
      if (m.name == p.method)
        for (const ParamSpec& spec : m.params)
          if (spec.name == name) {
            p.method_options[name] = number(axis, value, spec.min, spec.max, spec.integer);
            return;
          }
    throw Error("X/Y plot: '" + name + "' is not an axis for method '" + p.method + "' (allowed: " +
                xy_axis_names(p.method).join(", ").toStdString() + ")");
  }
}

}  // namespace

QStringList xy_axis_names(const std::string& method) {
  QStringList names = kRequestAxes;
  for (const MethodInfo& m : available_methods())
    if (m.name == method)
      for (const ParamSpec& spec : m.params) names << QString::fromStdString(spec.name);
  return names;
}

QStringList parse_axis_values(const QString& text) {
  QStringList values;
  for (QString part : text.split(',', Qt::SkipEmptyParts)) {
    part = part.trimmed();
    const QStringList range = part.split('-');
    bool from_ok = false, to_ok = false;
    const int from = range.size() == 2 ? range[0].trimmed().toInt(&from_ok) : 0, to = range.size() == 2 ? range[1].trimmed().toInt(&to_ok) : 0;
    if (from_ok && to_ok && from <= to && to - from < 64) {
      for (int v = from; v <= to; ++v) values << QString::number(v);
    } else if (!part.isEmpty()) {
      values << part;
    }
  }
  return values;
}

std::vector<GenerateParams> xy_requests(const GenerateParams& base, const XyAxis& x, const XyAxis& y,
                                        const std::vector<std::string>& runnable) {
  if (x.name.isEmpty() || x.values.isEmpty()) throw Error("X/Y plot: the X axis needs a name and at least one value");
  if (!y.name.isEmpty() && y.values.isEmpty()) throw Error("X/Y plot: the Y axis '" + y.name.toStdString() + "' has no values");
  if (x.values.size() * std::max<qsizetype>(1, y.values.size()) > 64) throw Error("X/Y plot: at most 64 images");
  const QStringList y_values = y.name.isEmpty() ? QStringList{QString()} : y.values;
  std::vector<GenerateParams> requests;
  for (const QString& y_value : y_values)
    for (const QString& x_value : x.values) {
      GenerateParams p = base;
      p.preview_every = 0;
      // The method axis first, so that a method parameter on the other axis applies to that method.
      const bool y_first = y.name == "method";
      if (y_first) apply(p, y, y_value, runnable);
      apply(p, x, x_value, runnable);
      if (!y.name.isEmpty() && !y_first) apply(p, y, y_value, runnable);
      p.sampling.validate();
      requests.push_back(p);
    }
  return requests;
}

XyPlotDialog::XyPlotDialog(Engine& engine, std::function<GenerateParams()> base_request, QWidget* parent)
    : QDialog(parent), engine_(engine), base_request_(std::move(base_request)), worker_thread_(engine) {
  setWindowTitle("X/Y plot");
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  const auto axis_row = [&](QComboBox*& name, QLineEdit*& values, const QString& label, const QString& example, bool optional) {
    auto* row = new QHBoxLayout;
    name = new QComboBox(this);
    name->setEditable(true);
    if (optional) name->addItem("");
    name->addItems(xy_axis_names(base_request_().method));
    values = new QLineEdit(this);
    values->setPlaceholderText(example);
    values->setToolTip("Comma-separated values; a-b for a run of whole numbers, e.g. 0-3");
    row->addWidget(name);
    row->addWidget(values, 1);
    form->addRow(label, row);
  };
  axis_row(x_name_, x_values_, "X axis", "e.g. 0-3 (seeds) or ar, sjd, ssd (methods)", false);
  axis_row(y_name_, y_values_, "Y axis (optional)", "e.g. 1, 1.5, 3 (cfg)", true);
  layout->addLayout(form);
  auto* buttons = new QHBoxLayout;
  run_ = new QPushButton("Run", this);
  save_ = new QPushButton("Save PNG…", this);
  save_->setEnabled(false);
  status_ = new QLabel("The request of the main window, over the axes", this);
  buttons->addWidget(run_);
  buttons->addWidget(save_);
  buttons->addWidget(status_, 1);
  layout->addLayout(buttons);
  auto* scroll = new QScrollArea(this);
  picture_ = new QLabel(scroll);
  scroll->setWidget(picture_);
  scroll->setWidgetResizable(true);
  layout->addWidget(scroll, 1);
  resize(900, 700);

  connect(worker_thread_.worker(), &GenerationWorker::finished, this, [this](const QImage& image, bool cancelled, const QString&) {
    RunMetrics m;
    for (const Event& e : worker_thread_.worker()->take_events())
      if (const auto* end = std::get_if<RunEnd>(&e)) m.nfe = end->nfe, m.wall_ms = end->wall_ms;
    plot_.images.push_back(image);
    plot_.notes << QString("NFE %1 · %2 ms").arg(m.nfe).arg(m.wall_ms, 0, 'f', 0);
    show_grid();
    if (cancelled) next_ = static_cast<int>(requests_.size());
    start_next();
  });
  connect(worker_thread_.worker(), &GenerationWorker::failed, this, [this](const QString& message) {
    status_->setText("Error: " + message);
    next_ = -1;
    run_->setEnabled(true);
    Q_EMIT finished();
  });
  connect(run_, &QPushButton::clicked, this, [this] {
    x_ = {x_name_->currentText().trimmed(), parse_axis_values(x_values_->text())};
    y_ = {y_name_->currentText().trimmed(), parse_axis_values(y_values_->text())};
    run();
  });
  connect(save_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, "Save X/Y plot", "xy-plot.png", "PNG images (*.png)");
    if (!path.isEmpty()) save(path);
  });
}

void XyPlotDialog::set_axes(const XyAxis& x, const XyAxis& y) {
  x_ = x;
  y_ = y;
  x_name_->setCurrentText(x.name);
  x_values_->setText(x.values.join(", "));
  y_name_->setCurrentText(y.name);
  y_values_->setText(y.values.join(", "));
}

bool XyPlotDialog::run() {
  if (running()) return false;
  base_ = base_request_();
  try {
    requests_ = xy_requests(base_, x_, y_, engine_.info().methods);
  } catch (const Error& e) {
    status_->setText(e.what());
    return false;
  }
  plot_ = {};
  const QString subject = base_.prompt.empty() ? QString("class %1").arg(base_.class_id) : "\"" + QString::fromStdString(base_.prompt) + "\"";
  // Name only what no axis varies.
  QStringList fixed = {subject};
  if (x_.name != "seed" && y_.name != "seed") fixed << QString("seed %1").arg(base_.seed);
  if (x_.name != "method" && y_.name != "method") fixed << QString::fromStdString(base_.method);
  fixed << QString::fromStdString(base_.sampling.to_string());
  plot_.title = fixed.join(", ");
  plot_.x_name = x_.name;
  plot_.x_values = x_.values;
  plot_.y_name = y_.name;
  plot_.y_values = y_.values;
  run_->setEnabled(false);
  save_->setEnabled(false);
  next_ = 0;
  start_next();
  return true;
}

void XyPlotDialog::start_next() {
  if (next_ < 0) return;
  if (next_ >= static_cast<int>(requests_.size())) {
    next_ = -1;
    run_->setEnabled(true);
    save_->setEnabled(!grid_.isNull());
    status_->setText(QString("%1 images").arg(plot_.images.size()));
    Q_EMIT finished();
    return;
  }
  status_->setText(QString("image %1 of %2…").arg(next_ + 1).arg(requests_.size()));
  const GenerateParams params = requests_[static_cast<std::size_t>(next_++)];
  worker_thread_.generate(params);
}

void XyPlotDialog::show_grid() {
  grid_ = app::render_xy_grid(plot_);
  picture_->setPixmap(QPixmap::fromImage(grid_));
}

bool XyPlotDialog::save(const QString& path) {
  try {
    app::write_png(path.toStdString(), grid_, {{app::kParametersKey, base_.to_json()}});
    status_->setText("Wrote " + path);
    return true;
  } catch (const std::exception& e) {
    status_->setText(QString("Could not write %1: %2").arg(path, QString::fromStdString(user_message(e))));
    return false;
  }
}

}  // namespace speculum::ui
