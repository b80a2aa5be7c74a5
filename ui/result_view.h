// A bench or sweep result opened in the studio (File > Open, or the Compare tab's "Open result…"): the
// table `bench` prints (per method or setting: NFE, τ, acceptance, time, speed-up against ar, checker pass
// rate and Fréchet distances), the speed-quality chart, and a sweep's image grid when the result names one.
#pragma once

#include <QWidget>

#include "speculum_tools.h"

class QLabel;
class QTableWidget;

namespace speculum::ui {

class ResultView : public QWidget {
  Q_OBJECT
 public:
  explicit ResultView(QWidget* parent = nullptr);

  // Throws speculum::Error naming the file and field when it is not a readable result.
  void open(const QString& path);

  const QTableWidget* table() const { return table_; }
  bool has_chart() const;
  bool has_grid() const;

 private:
  QLabel* title_ = nullptr;
  QTableWidget* table_ = nullptr;
  QLabel* chart_ = nullptr;
  QLabel* grid_ = nullptr;
};

}  // namespace speculum::ui
