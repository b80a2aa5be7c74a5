// Live charts of a run (Qt Charts): tokens committed per forward pass and acceptance rate per step,
// cumulative tokens against NFE, and a summary line (NFE, τ, wall time, tokens/s).
#pragma once

#include <QWidget>

#include "trace/timeline.h"

class QLabel;
class QChartView;
class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace speculum::ui {

class MetricsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit MetricsPanel(QWidget* parent = nullptr);

  // Plots the first `shown_steps` steps of the timeline (all of them while a run is live).
  void show_timeline(const Timeline& timeline, int shown_steps);
  QString summary_text() const;

 protected:
  void changeEvent(QEvent* event) override;  // charts follow the dark / light palette

 private:
  void apply_chart_theme();
  struct Chart {
    QChartView* view = nullptr;
    QLineSeries* series = nullptr;
    QValueAxis* x = nullptr;
    QValueAxis* y = nullptr;
  };
  Chart make_chart(const QString& title, const QString& x_title, const QString& y_title);

  Chart tokens_per_pass_;
  Chart cumulative_;
  Chart acceptance_;
  QLabel* summary_ = nullptr;
};

}  // namespace speculum::ui
