// The replay scrubber: a slider over a run's steps, step back / forward, play / pause at a chosen
// speed. Position n means "the state after n steps". While a run is live the bar follows the newest
// step until the user moves it back; moving to the end follows again.
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QSlider;
class QTimer;
class QToolButton;

namespace speculum::ui {

class TimelineBar : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineBar(QWidget* parent = nullptr);

  void set_step_count(int steps);  // keeps the position, or follows the end when following
  int position() const;
  int step_count() const;
  void set_position(int steps);
  bool playing() const;

  void step_back();
  void step_forward();
  void toggle_play();

 Q_SIGNALS:
  void position_changed(int steps);

 private:
  void update_label();

  QToolButton* back_ = nullptr;
  QToolButton* play_ = nullptr;
  QToolButton* forward_ = nullptr;
  QSlider* slider_ = nullptr;
  QComboBox* speed_ = nullptr;
  QLabel* label_ = nullptr;
  QTimer* timer_ = nullptr;
  bool following_ = true;
};

}  // namespace speculum::ui
