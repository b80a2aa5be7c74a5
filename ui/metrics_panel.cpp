#include "metrics_panel.h"

#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QLineSeries>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace speculum::ui {

namespace {

// The range [0, max] with ticks at a round interval (1, 2 or 5 times a power of ten) from 0, about five per axis,
// while the range stays exactly the data's (256 steps end at 256, not at a rounded 300). The interval is set before
// the range: a chart builds an item per tick at each change, and the old interval over a new range of 65,536
// (a trace's forward passes) made tens of thousands of them.
void set_range_with_round_ticks(QValueAxis* axis, double max) {
  const double raw = max / 5;
  const double power = std::pow(10, std::floor(std::log10(std::max(raw, 1.0))));
  double interval = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) {
      interval = m * power;
      break;
    }
  axis->setTickType(QValueAxis::TicksDynamic);
  axis->setTickAnchor(0);
  axis->setTickInterval(interval);
  axis->setRange(0, max);
}

// The smallest 1, 2 or 5 times a power of ten that is at least `value`.
double round_ceiling(double value) {
  const double power = std::pow(10, std::floor(std::log10(std::max(value, 1.0))));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= value) return m * power;
  return 10 * power;
}

}  // namespace

MetricsPanel::MetricsPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel("No run yet", this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setToolTip(
      "<b>step</b>: one round of draft, verify and commit (ar: one token)<br>"
      "<b>NFE</b>: target forward passes so far, the prefix pass included; drafters' passes are not counted<br>"
      "<b>τ</b>: tokens committed per target forward pass (ar: 1)<br>"
      "<b>acceptance</b>: draft tokens accepted (strictly or softly) over draft tokens verified<br>"
      "<b>outside the forward</b>: wall time not spent in target forwards: drafting, sampling, bookkeeping<br>"
      "<b>drafting</b>: wall time in drafters, heads and MuLo-SD's up-sampling (known when the run ends)");
  layout->addWidget(summary_);
  tokens_per_pass_ = make_chart("Tokens committed per forward pass", "step", "tokens");
  cumulative_ = make_chart("Tokens vs. forward passes", "NFE", "tokens");
  acceptance_ = make_chart("Acceptance rate per step", "step", "rate");
  for (const Chart* c : {&tokens_per_pass_, &cumulative_, &acceptance_}) layout->addWidget(c->view, 1);
  apply_chart_theme();
}

void MetricsPanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) apply_chart_theme();
}

void MetricsPanel::apply_chart_theme() {
  const bool dark = palette().color(QPalette::Window).lightness() < 128;
  for (const Chart* c : {&tokens_per_pass_, &cumulative_, &acceptance_}) {
    QChart* chart = c->view->chart();
    const QString title = chart->title();
    chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);  // resets fonts and pens
    chart->setBackgroundRoundness(0);
    c->series->setPen(QPen(dark ? QColor(86, 180, 233) : QColor(0, 114, 178), 2));  // Okabe-Ito sky blue / blue
    for (QValueAxis* axis : {c->x, c->y}) {
      QFont font = axis->labelsFont();
      font.setPointSizeF(font.pointSizeF() * 0.8);
      axis->setLabelsFont(font);
      axis->setTitleFont(font);
    }
    chart->setTitle(title);
  }
}

MetricsPanel::Chart MetricsPanel::make_chart(const QString& title, const QString& x_title, const QString& y_title) {
  Chart c;
  auto* chart = new QChart;
  chart->setTitle(title);
  chart->legend()->hide();
  chart->setMargins(QMargins(2, 2, 2, 2));
  c.series = new QLineSeries(chart);
  chart->addSeries(c.series);
  c.x = new QValueAxis(chart);
  c.y = new QValueAxis(chart);
  c.x->setTitleText(x_title);
  c.y->setTitleText(y_title);
  c.x->setLabelFormat("%d");
  c.y->setLabelFormat(y_title == "tokens" ? "%d" : "%.2g");
  chart->addAxis(c.x, Qt::AlignBottom);
  chart->addAxis(c.y, Qt::AlignLeft);
  c.series->attachAxis(c.x);
  c.series->attachAxis(c.y);
  c.view = new QChartView(chart, this);
  c.view->setRenderHint(QPainter::Antialiasing);
  c.view->setMinimumHeight(150);
  return c;
}

void MetricsPanel::show_timeline(const Timeline& timeline, int shown_steps, bool live) {
  const int n = std::clamp(shown_steps, 0, timeline.step_count());
  if (live) live_charts_pacer_.run_if_due([&] { plot(timeline, n, true); });
  else plot(timeline, n, false);
  const RunMetrics m = timeline.metrics_after(n);
  // One group per line, so that the narrow dock never breaks a label from its number.
  QString text = QString("<b>%1</b> · step %2/%3<br>%4 tokens · NFE %5 · τ %6")
                     .arg(timeline.run_begin() ? QString::fromStdString(timeline.run_begin()->method) : QString("—"))
                     .arg(n)
                     .arg(timeline.step_count())
                     .arg(m.tokens)
                     .arg(m.nfe)
                     .arg(m.mean_accepted_length(), 0, 'f', 2);
  if (m.drafted_verified > 0) text += QString("<br>acceptance %1 % (%2 / %3 drafts)").arg(100 * m.acceptance_rate(), 0, 'f', 1).arg(m.accepted).arg(m.drafted_verified);
  text += QString("<br>wall %1 ms · %2 tokens/s<br>%3 % outside the forward")
              .arg(m.wall_ms, 0, 'f', 0)
              .arg(m.tokens_per_second(), 0, 'f', 0)
              .arg(100 * m.outside_forward_share(), 0, 'f', 1);
  // Drafting time arrives with the run's end (RunEnd.draft_ms); older traces carry none.
  if (m.draft_ms > 0) text += QString("<br>%1 % drafting").arg(100 * m.draft_share(), 0, 'f', 1);
  if (timeline.finished() && n == timeline.step_count() && m.cancelled) text += " · <i>stopped</i>";
  summary_->setText(text);
}

void MetricsPanel::plot(const Timeline& timeline, int n, bool live) {
  const auto& steps = timeline.steps();
  QList<QPointF> per_pass, cumulative{{0, 0}}, acceptance;
  double max_per_pass = 1, max_tokens = 1;
  bool any_verified = false;
  for (int i = 0; i < n; ++i) {
    const StepPoint& s = steps[i];
    per_pass << QPointF(i + 1, s.tokens_per_pass());
    cumulative << QPointF(s.nfe_total, s.tokens_total);
    if (s.verified > 0) {
      acceptance << QPointF(i + 1, s.acceptance_rate());
      any_verified = true;
    }
    max_per_pass = std::max(max_per_pass, s.tokens_per_pass());
    max_tokens = std::max<double>(max_tokens, std::max(s.tokens_total, s.nfe_total));
  }
  max_tokens = std::max(max_tokens, 8.0);
  double total_steps = std::max(8, timeline.step_count());  // integer ticks even before a run
  if (live) {
    max_tokens = round_ceiling(max_tokens);
    total_steps = round_ceiling(total_steps);
  }
  tokens_per_pass_.series->replace(per_pass);
  set_range_with_round_ticks(tokens_per_pass_.x, total_steps);
  set_range_with_round_ticks(tokens_per_pass_.y, std::ceil(max_per_pass * 1.1));
  cumulative_.series->replace(cumulative);
  set_range_with_round_ticks(cumulative_.x, max_tokens);
  set_range_with_round_ticks(cumulative_.y, max_tokens);
  acceptance_.series->replace(acceptance);
  set_range_with_round_ticks(acceptance_.x, total_steps);
  acceptance_.y->setRange(0, 1);
  acceptance_.view->chart()->setTitle(any_verified || n == 0 ? "Acceptance rate per step"
                                                             : "Acceptance per step (no drafts)");
}

QString MetricsPanel::summary_text() const { return summary_->text(); }

double MetricsPanel::steps_axis_end() const { return tokens_per_pass_.x->max(); }

}  // namespace speculum::ui
