// Live charts of a run (Qt Charts): tokens committed per forward pass and acceptance rate per step,
// cumulative tokens against NFE, and a summary line (NFE, τ, wall time, tokens/s).
#pragma once

#include <QWidget>

#include "pacer.h"
#include "speculum_tools.h"

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
  // `live`: the run is still growing. The charts are then redrawn at most 4 times a second and their axes end at a
  // round number that the data grows into (a change of range lays an axis out again); the summary follows every call.
  void show_timeline(const Timeline& timeline, int shown_steps, bool live = false);
  QString summary_text() const;
  double steps_axis_end() const;  // where the per-step charts' x axis ends

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
  void plot(const Timeline& timeline, int shown_steps, bool live);

  Chart tokens_per_pass_;
  Chart cumulative_;
  Chart acceptance_;
  QLabel* summary_ = nullptr;
  Pacer live_charts_pacer_{250, 0.1};
};

}  // namespace speculum::ui
