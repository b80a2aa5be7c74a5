// The studio's main window (minimal for now): request controls, the live canvas, and a status line.
#pragma once

#include <QMainWindow>
#include <QThread>
#include <memory>

#include "speculum.h"
#include "trace/grid_state.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTimer;

namespace speculum::ui {

class CanvasWidget;
class GenerationWorker;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(std::unique_ptr<Engine> engine, QWidget* parent = nullptr);
  ~MainWindow() override;

  void set_prompt(const QString& prompt);
  void set_seed(int seed);
  void start_generation();
  void stop_generation();
  bool running() const { return running_; }

 Q_SIGNALS:
  void generation_finished(bool cancelled);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  QWidget* build_controls();
  void drain_events();  // at display rate
  void validate_prompt();
  GenerateParams request() const;
  void set_running(bool running);

  std::unique_ptr<Engine> engine_;
  QThread worker_thread_;
  GenerationWorker* worker_ = nullptr;
  GridState grid_;
  MetricsAccumulator metrics_;
  bool running_ = false;

  QLineEdit* prompt_ = nullptr;
  QComboBox* class_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QDoubleSpinBox* cfg_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QSpinBox* top_k_ = nullptr;
  QDoubleSpinBox* top_p_ = nullptr;
  QComboBox* method_ = nullptr;
  QPushButton* generate_ = nullptr;
  QPushButton* stop_ = nullptr;
  QCheckBox* grid_lines_ = nullptr;
  QLabel* prompt_problem_ = nullptr;
  CanvasWidget* canvas_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QTimer* frame_timer_ = nullptr;
};

}  // namespace speculum::ui
