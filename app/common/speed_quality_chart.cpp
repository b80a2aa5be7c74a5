#include "common/speed_quality_chart.h"

#include <QFont>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "common/chart_canvas.h"
#include "common/offscreen_gui.h"
#include "common/png_export.h"
#include "speculum.h"

namespace speculum::app {

QImage speed_quality_chart(const BenchRun& run, const std::vector<BenchRow>& rows) {
  const auto ar = std::find_if(rows.begin(), rows.end(), [](const BenchRow& r) { return r.method == "ar"; });
  if (ar == rows.end() || ar->checked == 0)
    throw Error("the speed-quality chart needs the checker's verdicts: shapes prompts (e.g. --prompts builtin:N) on a shapes bundle");
  const int width = 760, height = 480, left = 70, right = 24, top = 44, bottom = 52;
  QImage image = white_canvas(width, height);
  QPainter p(&image);
  p.setRenderHint(QPainter::Antialiasing);
  const QFont font = chart_font();
  p.setFont(font);

  const double ar_rate = 100.0 * ar->passed / ar->checked;
  struct Point {
    QString label;
    double x, x_lo, x_hi, y, y_lo, y_hi;
    bool is_ar;
  };
  std::vector<Point> points;
  for (const auto& r : rows) {
    if (r.checked == 0) continue;
    // The whisker: ar's rate plus the paired difference's 95 % interval (ar itself has none).
    const double y = 100.0 * r.passed / r.checked, half = 196 * r.vs_ar.standard_error();
    const double paired = r.method == "ar" ? y : ar_rate + 100 * r.vs_ar.difference();
    points.push_back({QString::fromStdString(r.method), r.speedup.median, r.speedup.q1, r.speedup.q3, y, paired - half, paired + half,
                      r.method == "ar"});
  }
  double x_lo = 1, x_hi = 1, y_lo = ar_rate, y_hi = ar_rate;
  for (const auto& pt : points) {
    x_lo = std::min(x_lo, pt.x_lo), x_hi = std::max(x_hi, pt.x_hi);
    y_lo = std::min(y_lo, pt.y_lo), y_hi = std::max(y_hi, pt.y_hi);
  }
  const double x_pad = (x_hi - x_lo) * 0.1 + 0.05, y_pad = (y_hi - y_lo) * 0.1 + 1;
  x_lo -= x_pad, x_hi += x_pad, y_lo = std::max(0.0, y_lo - y_pad), y_hi = std::min(100.0, y_hi + y_pad);
  const QRectF area(left, top, width - left - right, height - top - bottom);
  const auto map = [&](double x, double y) {
    return QPointF(area.left() + (x - x_lo) / (x_hi - x_lo) * area.width(), area.bottom() - (y - y_lo) / (y_hi - y_lo) * area.height());
  };
  p.setPen(QColor(225, 225, 225));
  for (int i = 0; i <= 5; ++i) {
    p.drawLine(map(x_lo + i * (x_hi - x_lo) / 5, y_lo), map(x_lo + i * (x_hi - x_lo) / 5, y_hi));
    p.drawLine(map(x_lo, y_lo + i * (y_hi - y_lo) / 5), map(x_hi, y_lo + i * (y_hi - y_lo) / 5));
  }
  p.setPen(QPen(QColor(150, 150, 150), 1, Qt::DashLine));  // ar's speed and quality
  p.drawLine(map(1, y_lo), map(1, y_hi));
  p.drawLine(map(x_lo, ar_rate), map(x_hi, ar_rate));
  p.setPen(Qt::black);
  p.drawRect(area);
  for (int i = 0; i <= 5; ++i) {
    const QPointF xs = map(x_lo + i * (x_hi - x_lo) / 5, y_lo), ys = map(x_lo, y_lo + i * (y_hi - y_lo) / 5);
    p.drawText(QRectF(xs.x() - 40, area.bottom() + 4, 80, 16), Qt::AlignCenter, QString::number(x_lo + i * (x_hi - x_lo) / 5, 'f', 2));
    p.drawText(QRectF(0, ys.y() - 8, left - 6, 16), Qt::AlignRight | Qt::AlignVCenter, QString::number(y_lo + i * (y_hi - y_lo) / 5, 'f', 1));
  }
  p.drawText(QRectF(area.left(), height - 24, area.width(), 18), Qt::AlignCenter,
             "speed-up against ar (median of per-image ratios, whiskers: IQR)");
  p.save();
  p.translate(16, area.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-area.height() / 2, -8, area.height(), 16), Qt::AlignCenter, "checker pass rate, % (whiskers: paired 95 % interval)");
  p.restore();
  p.setFont(chart_font(14, true));
  p.drawText(QRectF(0, 10, width, 22), Qt::AlignCenter,
             QString("%1: speed and quality, %2 prompt(s) x %3 seed(s)").arg(QString::fromStdString(run.bundle)).arg(run.prompts.size()).arg(run.seeds));
  p.setFont(font);
  const QColor colours[] = {QColor(0, 114, 178), QColor(213, 94, 0), QColor(0, 158, 115), QColor(204, 121, 167),
                            QColor(230, 159, 0), QColor(86, 180, 233)};  // Okabe-Ito
  p.setClipRect(area.adjusted(-1, -1, 60, 1));  // whiskers past the axes' range stop at the frame
  for (std::size_t k = 0; k < points.size(); ++k) {
    const Point& pt = points[k];
    const QColor colour = pt.is_ar ? QColor(0, 0, 0) : colours[k % 6];
    p.setPen(QPen(colour, 1.5));
    p.drawLine(map(pt.x_lo, pt.y), map(pt.x_hi, pt.y));
    if (!pt.is_ar) p.drawLine(map(pt.x, pt.y_lo), map(pt.x, pt.y_hi));
    const QPointF c = map(pt.x, pt.y);
    if (pt.is_ar) p.fillRect(QRectF(c.x() - 5, c.y() - 5, 10, 10), colour);
    else p.setBrush(colour), p.drawEllipse(c, 4.5, 4.5), p.setBrush(Qt::NoBrush);
    p.drawText(c + QPointF(8, -6), pt.label);
  }
  p.end();
  return image;
}

void write_speed_quality_plot(const BenchRun& run, const std::vector<BenchRow>& rows, const std::string& path) {
  OffscreenGui gui;
  write_png(path, speed_quality_chart(run, rows), {});
}

}  // namespace speculum::app
