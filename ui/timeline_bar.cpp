#include "timeline_bar.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>
#include <QTimer>
#include <QToolButton>

namespace speculum::ui {

TimelineBar::TimelineBar(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto button = [&](const QString& text, const QString& tip) {
    auto* b = new QToolButton(this);
    b->setText(text);
    b->setToolTip(tip);
    layout->addWidget(b);
    return b;
  };
  back_ = button("◀", "Step back (Left)");
  play_ = button("▶", "Play / pause (Space)");
  forward_ = button("▶|", "Step forward (Right)");
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setRange(0, 0);
  slider_->setToolTip("Scrub through the run's steps");
  layout->addWidget(slider_, 1);
  speed_ = new QComboBox(this);
  for (int rate : {2, 5, 10, 25, 60}) speed_->addItem(QString("%1 steps/s").arg(rate), rate);
  speed_->setCurrentIndex(2);
  speed_->setToolTip("Playback speed");
  layout->addWidget(speed_);
  label_ = new QLabel(this);
  label_->setMinimumWidth(110);
  layout->addWidget(label_);
  timer_ = new QTimer(this);

  connect(back_, &QToolButton::clicked, this, &TimelineBar::step_back);
  connect(forward_, &QToolButton::clicked, this, &TimelineBar::step_forward);
  connect(play_, &QToolButton::clicked, this, &TimelineBar::toggle_play);
  connect(slider_, &QSlider::valueChanged, this, [this](int value) {
    following_ = value == slider_->maximum();
    update_label();
    Q_EMIT position_changed(value);
  });
  connect(speed_, &QComboBox::currentIndexChanged, this,
          [this] { timer_->setInterval(1000 / speed_->currentData().toInt()); });
  timer_->setInterval(1000 / speed_->currentData().toInt());
  connect(timer_, &QTimer::timeout, this, [this] {
    if (position() >= step_count()) toggle_play();
    else step_forward();
  });
  update_label();
}

void TimelineBar::set_step_count(int steps) {
  const bool follow = following_;
  {
    const QSignalBlocker block(slider_);
    slider_->setMaximum(steps);
  }
  if (follow && slider_->value() != steps) slider_->setValue(steps);
  following_ = follow;
  update_label();
}

int TimelineBar::position() const { return slider_->value(); }
int TimelineBar::step_count() const { return slider_->maximum(); }
void TimelineBar::set_position(int steps) { slider_->setValue(steps); }
bool TimelineBar::playing() const { return timer_->isActive(); }

void TimelineBar::step_back() { slider_->setValue(slider_->value() - 1); }
void TimelineBar::step_forward() { slider_->setValue(slider_->value() + 1); }

void TimelineBar::toggle_play() {
  if (timer_->isActive()) {
    timer_->stop();
  } else {
    if (position() >= step_count()) set_position(0);  // play from the start after the end
    timer_->start();
  }
  play_->setText(timer_->isActive() ? "❚❚" : "▶");
}

void TimelineBar::update_label() { label_->setText(QString("step %1 / %2").arg(slider_->value()).arg(slider_->maximum())); }

}  // namespace speculum::ui
