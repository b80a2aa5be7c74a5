#include "comparison_view.h"
#include "ran_request.h"

#include <QFileDialog>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QFontMetrics>
#include <QPainter>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "canvas_widget.h"
#include "generation_worker.h"
#include "method_params_form.h"
#include "result_view.h"
#include "table_height.h"
#include "timeline_bar.h"

namespace speculum::ui {

ComparisonView::ComparisonView(Engine& engine, std::function<GenerateParams()> base_request, QWidget* parent)
    : QWidget(parent), engine_(engine), base_request_(std::move(base_request)), worker_thread_(engine) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel("Panes", this));
  panes_spin_ = new QSpinBox(this);
  panes_spin_->setRange(2, 4);
  panes_spin_->setToolTip("Number of methods to compare");
  bar->addWidget(panes_spin_);
  bar->addWidget(new QLabel("Repeats", this));
  repeats_spin_ = new QSpinBox(this);
  repeats_spin_->setRange(1, 10);
  repeats_spin_->setToolTip("Timed runs per pane, round-robin: the table shows mean ± standard deviation");
  bar->addWidget(repeats_spin_);
  run_ = new QPushButton("Run all", this);
  run_->setToolTip("Run every pane on the prompt, seed and sampling of the Generate tab, one after another");
  stop_ = new QPushButton("Stop", this);
  stop_->setEnabled(false);
  bar->addWidget(run_);
  bar->addWidget(stop_);
  bar->addStretch(1);
  auto* open_result_button = new QPushButton("Open result…", this);
  open_result_button->setToolTip("Show a result of speculum-cli bench or sweep (--json): its table, speed-quality chart and sweep grid");
  connect(open_result_button, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Open bench or sweep result", {}, "Bench results (*.json);;All files (*)");
    if (!path.isEmpty()) Q_EMIT open_file_requested(path);
  });
  bar->addWidget(open_result_button);
  layout->addLayout(bar);

  panes_area_ = new QWidget(this);
  grid_ = new QGridLayout(panes_area_);
  grid_->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(panes_area_, 1);
  scrubber_ = new TimelineBar(this);
  layout->addWidget(scrubber_);
  table_ = new QTableWidget(0, 6, this);
  table_->setHorizontalHeaderLabels({"method", "NFE", "τ", "wall ms", "tokens/s", "speed-up vs ar"});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  layout->addWidget(table_);

  connect(worker_thread_.worker(), &GenerationWorker::finished, this, [this](const QImage& image, bool cancelled, const QString&) {
    if (warming_) {  // an untimed warm-up: its events and image are dropped
      warming_ = false;
      worker_thread_.worker()->take_events();
      if (cancelled) finish_runs();
      else start_next();
      return;
    }
    drain_events();
    if (current_ < 0) return;
    if (repeat_ == 0) {
      runs_[current_].final_image = image;
      runs_[current_].done = !cancelled;
      show_position(scrubber_->position());  // replace the last live preview with the final image
    }
    if (cancelled) {
      finish_runs();
      return;
    }
    if (++current_ == static_cast<int>(runs_.size()) && repeat_ + 1 < repeats()) {
      current_ = 0;
      ++repeat_;
    }
    start_next();
  });
  connect(worker_thread_.worker(), &GenerationWorker::failed, this, [this](const QString& message) {
    drain_events();
    if (current_ >= 0 && current_ < pane_count()) panes_[current_].summary->setText("Error: " + message);
    finish_runs();
  });
  frame_timer_ = new QTimer(this);
  frame_timer_->setInterval(33);
  connect(frame_timer_, &QTimer::timeout, this, [this] {
    if (frame_pacer_.next_frame()) drain_events();
  });

  connect(panes_spin_, &QSpinBox::valueChanged, this, &ComparisonView::set_pane_count);
  connect(run_, &QPushButton::clicked, this, &ComparisonView::run_all);
  connect(stop_, &QPushButton::clicked, this, &ComparisonView::stop);
  connect(scrubber_, &TimelineBar::position_changed, this, &ComparisonView::show_position);
  set_pane_count(2);
}

void ComparisonView::open_result(const QString& path) {
  if (!result_view_) {
    result_view_ = new ResultView(this);
    result_view_->setWindowFlag(Qt::Window);
    result_view_->resize(1280, 820);
  }
  result_view_->open(path);
  result_view_->show();
  result_view_->raise();
}

int ComparisonView::pane_count() const { return static_cast<int>(panes_.size()); }

void ComparisonView::set_repeats(int repeats) { repeats_spin_->setValue(repeats); }
int ComparisonView::repeats() const { return repeats_spin_->value(); }
int ComparisonView::position() const { return scrubber_->position(); }

int ComparisonView::focused_pane() const {
  if (running() && current_ < pane_count()) return current_;
  return std::clamp(selected_, 0, std::max(0, pane_count() - 1));
}

void ComparisonView::select_pane(int pane) {
  if (pane < 0 || pane >= pane_count()) return;
  selected_ = pane;
  for (int i = 0; i < pane_count(); ++i) panes_[i].box->setStyleSheet(i == pane ? "QGroupBox { font-weight: bold; }" : "");
  Q_EMIT focus_changed();
}

MethodParamsForm* ComparisonView::method_form(int pane) { return panes_.at(pane).method; }

void ComparisonView::set_pane_count(int count) {
  if (running() || count == pane_count()) return;
  while (pane_count() > count) {
    delete panes_.back().box;
    panes_.pop_back();
  }
  while (pane_count() < count) {
    Pane pane;
    pane.box = new QGroupBox(QString("Pane %1").arg(pane_count() + 1), panes_area_);
    auto* box_layout = new QVBoxLayout(pane.box);
    pane.method = new MethodParamsForm(pane.box);
    const auto& runnable = engine_.info().methods;
    pane.method->set_runnable(runnable);
    pane.method->set_draft_sizes(engine_.info().draft_sizes, engine_.info().draft_size_key.threads);
    pane.method->set_recommended(engine_.info().method_options);
    // Pane i starts with the bundle's i-th method: ar beside the speculative ones.
    if (!runnable.empty()) pane.method->set_method(QString::fromStdString(runnable[std::min<std::size_t>(pane_count(), runnable.size() - 1)]));
    pane.canvas = new CanvasWidget(pane.box);
    pane.canvas->setMinimumSize(160, 160);
    pane.canvas->setToolTip("Click to show this pane's metrics and step explanation in the side panels");
    connect(pane.canvas, &CanvasWidget::pressed, this, [this, index = pane_count()] { select_pane(index); });
    pane.canvas->set_style(style_);
    pane.summary = new QLabel("not run", pane.box);
    pane.summary->setWordWrap(true);
    box_layout->addWidget(pane.method);
    box_layout->addWidget(pane.canvas, 1);
    box_layout->addWidget(pane.summary);
    const int index = pane_count();
    grid_->addWidget(pane.box, index / 2, index % 2);
    panes_.push_back(pane);
  }
  const QSignalBlocker block(panes_spin_);
  panes_spin_->setValue(count);
}

void ComparisonView::set_frame_style(const vis::FrameStyle& style) {
  style_ = style;
  for (Pane& pane : panes_) {
    pane.canvas->set_style(style);
    pane.canvas->set_low_res_image(low_res_preview_image(engine_, pane.canvas->grid(), style));
  }
}

void ComparisonView::run_all() {
  if (running()) return;
  const GenerateParams base = base_request_();
  runs_.clear();
  bool has_ar = false;
  for (Pane& pane : panes_) {
    Run run;
    run.params = base;
    run.params.method = pane.method->method().toStdString();
    run.params.method_options = pane.method->options();
    run.params.preview_every = 0;  // previews would add decoder time to the measured wall time
    has_ar = has_ar || run.params.method == "ar";
    runs_.push_back(std::move(run));
    pane.canvas->set_grid({});
    pane.canvas->set_image({});
    pane.summary->setText("waiting");
  }
  if (!has_ar) {
    Run reference;
    reference.params = base;
    reference.params.method = "ar";
    reference.params.method_options.clear();
    reference.params.preview_every = 0;
    runs_.push_back(std::move(reference));
  }
  // The first run of a method in a process pays for cold caches and first-touch allocations (the first of
  // two identical panes measured 10-40 % slower): each method new to this view gets one untimed run first.
  warmups_.clear();
  for (const Run& run : runs_)
    if (warmed_up_.insert(run.params.method).second) warmups_.push_back(run.params);
  scrubber_->set_step_count(0);
  run_->setEnabled(false);
  stop_->setEnabled(true);
  panes_spin_->setEnabled(false);
  repeats_spin_->setEnabled(false);
  current_ = 0;
  repeat_ = 0;
  frame_timer_->start();
  frame_pacer_.start();
  start_next();
}

void ComparisonView::stop() {
  if (running()) worker_thread_.worker()->cancel();
}

void ComparisonView::start_next() {
  if (current_ >= static_cast<int>(runs_.size())) {
    finish_runs();
    return;
  }
  if (!warmups_.empty()) {
    const GenerateParams params = warmups_.front();
    warmups_.erase(warmups_.begin());
    warming_ = true;
    for (Pane& pane : panes_) pane.summary->setText(QString("warming up %1 (untimed)").arg(QString::fromStdString(params.method)));
    worker_thread_.generate(params);
    return;
  }
  if (repeat_ == 0) {
    for (int i = current_ + 1; i < pane_count(); ++i) panes_[i].summary->setText("waiting");
    if (current_ < pane_count()) panes_[current_].summary->setText("running…");
  } else if (current_ < pane_count()) {
    panes_[current_].summary->setText(QString("timing repeat %1 of %2…").arg(repeat_ + 1).arg(repeats()));
  }
  Q_EMIT focus_changed();
  const GenerateParams params = runs_[current_].params;
  worker_thread_.generate(params);
}

void ComparisonView::finish_runs() {
  current_ = -1;
  run_->setEnabled(true);
  stop_->setEnabled(false);
  panes_spin_->setEnabled(true);
  repeats_spin_->setEnabled(true);
  frame_timer_->stop();
  update_table();
  Q_EMIT focus_changed();
  Q_EMIT all_finished();
}

void ComparisonView::drain_events() {
  const std::vector<Event> events = worker_thread_.worker()->take_events();
  if (warming_ || events.empty() || current_ < 0 || current_ >= static_cast<int>(runs_.size())) return;
  for (const Event& e : events)
    if (const auto* end = std::get_if<RunEnd>(&e); end && !end->cancelled) runs_[current_].wall_ms.push_back(end->wall_ms);
  if (repeat_ > 0) {  // a timed repeat: the same tokens as the first, only its time counts
    update_table();
    return;
  }
  for (const Event& e : events) runs_[current_].timeline.append(e);
  int longest = 0;
  for (const Run& run : runs_) longest = std::max(longest, run.timeline.step_count());
  const int position = scrubber_->position();
  scrubber_->set_step_count(longest);  // a following scrubber moves, and its signal repaints
  if (scrubber_->position() == position && position >= runs_[current_].timeline.step_count()) show_position(position);
  update_table();
}

void ComparisonView::show_position(int steps) {
  for (int i = 0; i < pane_count() && i < static_cast<int>(runs_.size()); ++i) {
    const Timeline& timeline = runs_[i].timeline;
    const int shown = std::min(steps, timeline.step_count());
    const GridState grid = timeline.state_after(shown);
    vis::FrameStyle style = style_;
    style.last_step = std::max(0, timeline.step_count() - 1);
    panes_[i].canvas->set_style(style);
    panes_[i].canvas->set_grid(grid);
    Run& run = runs_[i];
    if (run.done && shown == timeline.step_count()) {
      panes_[i].canvas->set_image(run.final_image);
    } else if (i == current_ && shown == timeline.step_count()) {
      panes_[i].canvas->set_image(run.preview.image_for(engine_, grid));
    } else {
      panes_[i].canvas->set_image(preview_image(engine_, grid));
    }
    panes_[i].canvas->set_low_res_image(low_res_preview_image(engine_, grid, style));
  }
  Q_EMIT focus_changed();
}

namespace {

struct Spread {
  double mean = 0, sd = 0;
};

Spread spread(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(values.size());
  if (values.size() > 1) {
    for (double v : values) s.sd += (v - s.mean) * (v - s.mean);
    s.sd = std::sqrt(s.sd / static_cast<double>(values.size() - 1));
  }
  return s;
}

QString with_spread(const Spread& s, int repeats, int decimals, const QString& unit = {}) {
  const QString mean = QString::number(s.mean, 'f', decimals) + unit;
  return repeats > 1 ? mean + " ± " + QString::number(s.sd, 'f', decimals) : mean;
}

}  // namespace

void ComparisonView::update_table() {
  // The reference: the first finished ar run (a pane, or the extra run made when no pane is ar). Speed-up per
  // repeat pairs the run with the reference's run of the same round.
  const Run* reference = nullptr;
  for (const Run& run : runs_)
    if (!reference && run.params.method == "ar" && run.done) reference = &run;
  table_->setRowCount(static_cast<int>(runs_.size()));
  fit_height_to_rows(table_);
  for (int i = 0; i < static_cast<int>(runs_.size()); ++i) {
    const Run& run = runs_[i];
    const RunMetrics& m = run.timeline.metrics();
    QString name = QString::fromStdString(run.params.method);
    for (const auto& [key, value] : run.params.method_options) name += QString(" %1=%2").arg(QString::fromStdString(key)).arg(value);
    if (&run == reference) name += i >= pane_count() ? " (reference, not a pane)" : " (reference)";
    std::vector<double> ratios;
    for (std::size_t r = 0; reference && r < run.wall_ms.size() && r < reference->wall_ms.size(); ++r)
      if (run.wall_ms[r] > 0) ratios.push_back(reference->wall_ms[r] / run.wall_ms[r]);
    const int timed = static_cast<int>(run.wall_ms.size());
    const Spread wall = spread(run.wall_ms);
    const QString speedup = run.done && !ratios.empty() ? with_spread(spread(ratios), static_cast<int>(ratios.size()), 2, "×") : QString("—");
    const double tokens_per_second = wall.mean > 0 ? m.tokens / (wall.mean / 1000.0) : m.tokens_per_second();
    const QStringList cells = {name, QString::number(m.nfe), QString::number(m.mean_accepted_length(), 'f', 2),
                               timed > 0 ? with_spread(wall, timed, 0) : QString::number(m.wall_ms, 'f', 0),
                               QString::number(tokens_per_second, 'f', 0), speedup};
    for (int c = 0; c < cells.size(); ++c) table_->setItem(i, c, new QTableWidgetItem(cells[c]));
    if (timed > 1) table_->item(i, 3)->setToolTip(QString("mean ± standard deviation of %1 timed runs").arg(timed));
    if (i < pane_count() && (repeat_ == 0 || !running()))  // while repeats run, the panes say which repeat
      panes_[i].summary->setText(run.done ? QString("NFE %1 · τ %2 · %3 ms · %4").arg(m.nfe).arg(m.mean_accepted_length(), 0, 'f', 2).arg(cells[3]).arg(speedup)
                                          : QString("step %1 · %2 tokens").arg(run.timeline.step_count()).arg(m.tokens));
  }
}

const Timeline& ComparisonView::timeline(int pane) const { return runs_.at(pane).timeline; }

const Timeline& ComparisonView::timeline_or_empty(int pane) const {
  static const Timeline empty;
  return pane >= 0 && pane < static_cast<int>(runs_.size()) ? runs_[pane].timeline : empty;
}

QString ComparisonView::caption() const {
  if (runs_.empty()) return "No comparison run yet";
  const GenerateParams& p = runs_.front().params;
  QStringList methods;
  for (int i = 0; i < pane_count() && i < static_cast<int>(runs_.size()); ++i) {
    const GenerateParams ran = ran_request(runs_[i].timeline, runs_[i].params);
    QString name = QString::fromStdString(ran.method);
    for (const auto& [key, value] : ran.method_options) name += QString(" %1=%2").arg(QString::fromStdString(key)).arg(value);
    methods << name;
  }
  const QString subject = p.prompt.empty() ? QString("class %1").arg(p.class_id) : QString("\"%1\"").arg(QString::fromStdString(p.prompt));
  return QString("%1, seed %2 · %3 · %4 · %5").arg(subject).arg(p.seed).arg(QString::fromStdString(p.sampling.to_string()),
                                                                             methods.join(" | "), QString::fromStdString(engine_.info().name));
}

QString ComparisonView::table_text() const {
  std::vector<QStringList> rows(1);
  for (int c = 0; c < table_->columnCount(); ++c) rows[0] << table_->horizontalHeaderItem(c)->text();
  for (int r = 0; r < table_->rowCount(); ++r) {
    rows.emplace_back();
    for (int c = 0; c < table_->columnCount(); ++c) rows.back() << (table_->item(r, c) ? table_->item(r, c)->text() : QString());
  }
  std::vector<int> widths(static_cast<std::size_t>(table_->columnCount()), 0);
  for (const QStringList& row : rows)
    for (int c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], static_cast<int>(row[c].size()));
  QStringList lines;
  for (const QStringList& row : rows) {
    QString line;
    for (int c = 0; c < row.size(); ++c) line += (c ? "  " : "") + (c ? row[c].rightJustified(widths[c]) : row[c].leftJustified(widths[c]));
    lines << line;
  }
  return lines.join('\n');
}

QImage ComparisonView::render_image() {
  // A figure, not a screen grab: the caption (request, sampling, methods, bundle) above the panes and the table.
  const QImage panes = panes_area_->grab().toImage();
  const QImage table = table_->grab().toImage();
  const int width = std::max(panes.width(), table.width());
  QFont font = this->font();
  font.setPointSizeF(font.pointSizeF() * 1.1);
  const QFontMetrics metrics(font);
  const QRect text_box = metrics.boundingRect(QRect(0, 0, width - 16, 1000), Qt::TextWordWrap, caption());
  const int caption_height = text_box.height() + 16;
  QImage out(width, caption_height + panes.height() + table.height(), QImage::Format_RGB32);
  out.fill(palette().window().color());
  QPainter painter(&out);
  painter.setFont(font);
  painter.setPen(palette().windowText().color());
  painter.drawText(QRect(8, 8, width - 16, text_box.height()), Qt::TextWordWrap, caption());
  painter.drawImage(0, caption_height, panes);
  painter.drawImage(0, caption_height + panes.height(), table);
  return out;
}

}  // namespace speculum::ui
