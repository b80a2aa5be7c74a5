// speculum-cli plot: line chart PNG of columns of a training log CSV (the model card's loss curves).
// Columns logged only at checkpoints repeat their last value in between (and are 0 before the first):
// a point is drawn only where the value is non-zero and changed, so those read as measured points.
#include <QFont>
#include <QImage>
#include <QPainter>
#include <QPainterPath>
#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>

#include "cli/cli_options.h"
#include "common/chart_canvas.h"
#include "common/offscreen_gui.h"
#include "common/png_export.h"
#include "speculum_tools.h"

namespace speculum::cli {

namespace {

struct Series {
  std::string name;
  std::vector<QPointF> points;
};

std::vector<Series> read_columns(const std::string& path, const std::vector<std::string>& wanted) {
  std::istringstream in(read_input_file(path, limits::kMaxTableBytes, "training log"));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::stringstream header_stream(line);
  for (std::string cell; std::getline(header_stream, cell, ',');) header.push_back(cell);
  if (header.empty() || header[0] != "step") throw Error("'" + path + "' is not a training log (its first column is not 'step')");
  std::vector<std::size_t> columns;
  for (const auto& w : wanted) {
    const auto it = std::find(header.begin(), header.end(), w);
    if (it == header.end()) throw Error("'" + path + "' has no column '" + w + "' (columns: " + line + ")");
    columns.push_back(static_cast<std::size_t>(it - header.begin()));
  }
  std::vector<Series> series;
  for (const auto& w : wanted) series.push_back({w, {}});
  for (int number = 2; std::getline(in, line); ++number) {
    std::vector<double> values;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) {
      try {
        values.push_back(std::stod(cell));
      } catch (const std::exception&) {
        throw Error("'" + path + "' line " + std::to_string(number) + ": '" + cell + "' is not a number");
      }
    }
    for (std::size_t k = 0; k < columns.size(); ++k) {
      if (columns[k] >= values.size()) continue;
      const double v = values[columns[k]];
      if (v == 0 || (!series[k].points.empty() && series[k].points.back().y() == v)) continue;
      series[k].points.emplace_back(values[0], v);
    }
  }
  return series;
}

QImage plot(const std::vector<Series>& series, const std::string& title, const std::string& y_label) {
  const int width = 720, height = 420, left = 64, right = 16, top = 40, bottom = 48;
  QImage image = app::white_canvas(width, height);
  QPainter p(&image);
  p.setRenderHint(QPainter::Antialiasing);
  const QFont font = app::chart_font();
  p.setFont(font);
  double x_max = 1, y_min = std::numeric_limits<double>::max(), y_max = std::numeric_limits<double>::lowest();
  for (const auto& s : series)
    for (const auto& pt : s.points) {
      x_max = std::max(x_max, pt.x());
      y_min = std::min(y_min, pt.y());
      y_max = std::max(y_max, pt.y());
    }
  if (y_min > y_max) y_min = 0, y_max = 1;
  const double pad = (y_max - y_min) * 0.05 + 1e-9;
  y_min -= pad, y_max += pad;
  const QRectF area(left, top, width - left - right, height - top - bottom);
  auto map = [&](QPointF pt) {
    return QPointF(area.left() + pt.x() / x_max * area.width(), area.bottom() - (pt.y() - y_min) / (y_max - y_min) * area.height());
  };
  p.setPen(QColor(220, 220, 220));
  for (int i = 0; i <= 5; ++i) {
    const double y = area.top() + i * area.height() / 5, x = area.left() + i * area.width() / 5;
    p.drawLine(QPointF(area.left(), y), QPointF(area.right(), y));
    p.drawLine(QPointF(x, area.top()), QPointF(x, area.bottom()));
  }
  p.setPen(Qt::black);
  p.drawRect(area);
  for (int i = 0; i <= 5; ++i) {
    const double y = area.bottom() - i * area.height() / 5, x = area.left() + i * area.width() / 5;
    p.drawText(QRectF(0, y - 8, left - 6, 16), Qt::AlignRight | Qt::AlignVCenter, QString::number(y_min + i * (y_max - y_min) / 5, 'g', 3));
    p.drawText(QRectF(x - 40, area.bottom() + 4, 80, 16), Qt::AlignCenter, QString::number(std::lround(i * x_max / 5)));
  }
  p.drawText(QRectF(area.left(), height - 22, area.width(), 18), Qt::AlignCenter, "step");
  p.save();
  p.translate(14, area.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-area.height() / 2, -8, area.height(), 16), Qt::AlignCenter, QString::fromStdString(y_label));
  p.restore();
  p.setFont(app::chart_font(14, true));
  p.drawText(QRectF(0, 8, width, 22), Qt::AlignCenter, QString::fromStdString(title));
  p.setFont(font);
  const QColor colours[] = {QColor(0, 114, 178), QColor(213, 94, 0), QColor(0, 158, 115), QColor(204, 121, 167)};  // Okabe-Ito
  for (std::size_t k = 0; k < series.size(); ++k) {
    const QColor colour = colours[k % 4];
    QPainterPath path;
    for (std::size_t i = 0; i < series[k].points.size(); ++i) {
      const QPointF q = map(series[k].points[i]);
      if (i == 0) path.moveTo(q);
      else path.lineTo(q);
    }
    p.setPen(QPen(colour, 2));
    p.drawPath(path);
    if (series[k].points.size() < 60)
      for (const auto& pt : series[k].points) p.drawEllipse(map(pt), 3, 3);
    p.fillRect(QRectF(area.right() - 180, area.top() + 10 + 20 * k, 14, 4), colour);
    p.drawText(QPointF(area.right() - 160, area.top() + 16 + 20 * k), QString::fromStdString(series[k].name));
  }
  return image;
}

}  // namespace

void add_plot_command(CLI::App& app) {
  struct Args {
    std::string csv, out, title, y_label = "value";
    std::vector<std::string> columns;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("plot", "Line chart PNG of a training log's columns (loss curves)");
  c->add_option("--csv", a->csv, "Training log (log.csv of a run)")->required();
  c->add_option("--columns", a->columns, "Columns to draw")->required()->delimiter(',');
  c->add_option("--out", a->out, "PNG to write")->required();
  c->add_option("--title", a->title, "Chart title");
  c->add_option("--y-label", a->y_label, "Y axis label")->capture_default_str();
  c->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      const auto series = read_columns(a->csv, a->columns);
      const app::OffscreenGui gui;
      app::write_png(a->out, plot(series, a->title, a->y_label), {});
      std::cout << "wrote " << a->out << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
