// Every run finished since the studio started, newest first, as thumbnails with seed, method and speed:
// the gallery of a seed batch, and the way back to an earlier run (click one to reopen it with its replay).
// Runs stay in memory (a 256-token run's events are small); the oldest go beyond kMaxRuns.
#pragma once

#include <QImage>
#include <QWidget>
#include <deque>

#include "speculum_tools.h"

class QListWidget;

namespace speculum::ui {

class HistoryPanel : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxRuns = 200;
  struct Run {
    GenerateParams params;
    Timeline timeline;
    QImage image;
  };

  explicit HistoryPanel(QWidget* parent = nullptr);
  void add(Run run);
  int count() const { return static_cast<int>(runs_.size()); }
  const Run& run(int index) const { return runs_.at(static_cast<std::size_t>(index)); }  // 0: the newest
  QString label(int index) const;  // "seed 3 · lisa · NFE 52 · 410 ms"

 Q_SIGNALS:
  void reopen_requested(int index);

 private:
  QListWidget* list_ = nullptr;
  std::deque<Run> runs_;
};

}  // namespace speculum::ui
