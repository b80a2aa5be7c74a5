#include "main_window.h"

#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSpinBox>
#include <QStatusBar>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include "canvas_widget.h"
#include "generation_worker.h"

namespace speculum::ui {

MainWindow::MainWindow(std::unique_ptr<Engine> engine, QWidget* parent)
    : QMainWindow(parent), engine_(std::move(engine)) {
  const ModelInfo& info = engine_->info();
  setWindowTitle(QString("Speculum — %1").arg(QString::fromStdString(info.name)));

  auto* central = new QWidget(this);
  auto* layout = new QHBoxLayout(central);
  layout->addWidget(build_controls());
  canvas_ = new CanvasWidget(central);
  layout->addWidget(canvas_, 1);
  setCentralWidget(central);

  progress_ = new QProgressBar(this);
  progress_->setRange(0, info.grid_rows * info.grid_cols);
  progress_->setMaximumWidth(220);
  status_ = new QLabel(QString::fromStdString(info.target_summary + " on " + info.device), this);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);

  worker_ = new GenerationWorker(*engine_);
  worker_->moveToThread(&worker_thread_);
  connect(&worker_thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &GenerationWorker::preview_ready, this,
          [this](const QImage& image, int, int) { canvas_->set_image(image); });
  connect(worker_, &GenerationWorker::finished, this, [this](const QImage& image, bool cancelled, const QString& summary) {
    drain_events();
    canvas_->set_image(image);
    status_->setText((cancelled ? "Stopped: " : "Done: ") + summary);
    set_running(false);
    Q_EMIT generation_finished(cancelled);
  });
  connect(worker_, &GenerationWorker::failed, this, [this](const QString& message) {
    drain_events();
    status_->setText("Error: " + message);
    set_running(false);
    Q_EMIT generation_finished(true);
  });
  worker_thread_.start();

  frame_timer_ = new QTimer(this);
  frame_timer_->setInterval(33);
  connect(frame_timer_, &QTimer::timeout, this, &MainWindow::drain_events);
  resize(980, 640);
}

MainWindow::~MainWindow() {
  worker_->cancel();
  worker_thread_.quit();
  worker_thread_.wait();
}

QWidget* MainWindow::build_controls() {
  const ModelInfo& info = engine_->info();
  auto* panel = new QWidget(this);
  panel->setMaximumWidth(360);
  auto* form = new QFormLayout(panel);

  if (info.text_conditioned) {
    prompt_ = new QLineEdit(panel);
    prompt_->setPlaceholderText("a red circle above a blue square");
    QStringList words;
    for (const auto& w : info.text_vocab) words << QString::fromStdString(w);
    auto* completer = new QCompleter(words, prompt_);
    completer->setCaseSensitivity(Qt::CaseInsensitive);
    prompt_->setCompleter(completer);
    prompt_->setToolTip(QString("Up to %1 words from the model's vocabulary").arg(info.max_prompt_words));
    connect(prompt_, &QLineEdit::textChanged, this, &MainWindow::validate_prompt);
    connect(prompt_, &QLineEdit::returnPressed, this, &MainWindow::start_generation);
    form->addRow("Prompt", prompt_);
    prompt_problem_ = new QLabel(panel);
    prompt_problem_->setWordWrap(true);
    prompt_problem_->setStyleSheet("color: #D55E00");
    form->addRow(prompt_problem_);
  } else {
    class_ = new QComboBox(panel);
    class_->setEditable(true);
    for (std::size_t i = 0; i < info.classes.size(); ++i)
      class_->addItem(QString("%1  %2").arg(i).arg(QString::fromStdString(info.classes[i])), int(i));
    class_->setInsertPolicy(QComboBox::NoInsert);
    form->addRow("Class", class_);
  }

  auto* seed_row = new QHBoxLayout;
  seed_ = new QSpinBox(panel);
  seed_->setRange(0, std::numeric_limits<int>::max());
  seed_->setToolTip("Same request and seed give the same image");
  auto* dice = new QToolButton(panel);
  dice->setText("Random");
  dice->setToolTip("Random seed");
  connect(dice, &QToolButton::clicked, this,
          [this] { seed_->setValue(QRandomGenerator::global()->bounded(std::numeric_limits<int>::max())); });
  seed_row->addWidget(seed_, 1);
  seed_row->addWidget(dice);
  form->addRow("Seed", seed_row);

  const SamplingParams defaults;
  cfg_ = new QDoubleSpinBox(panel);
  cfg_->setRange(0, 100);
  cfg_->setSingleStep(0.5);
  cfg_->setValue(defaults.cfg_scale);
  cfg_->setToolTip("Classifier-free guidance: uncond + s·(cond − uncond); 1 turns it off");
  form->addRow("CFG", cfg_);
  temperature_ = new QDoubleSpinBox(panel);
  temperature_->setRange(0, 100);
  temperature_->setSingleStep(0.05);
  temperature_->setValue(defaults.temperature);
  form->addRow("Temperature", temperature_);
  top_k_ = new QSpinBox(panel);
  top_k_->setRange(0, info.vocab_size);
  top_k_->setValue(defaults.top_k);
  top_k_->setSpecialValueText("off");
  form->addRow("Top-k", top_k_);
  top_p_ = new QDoubleSpinBox(panel);
  top_p_->setRange(0.01, 1);
  top_p_->setSingleStep(0.05);
  top_p_->setValue(defaults.top_p);
  form->addRow("Top-p", top_p_);

  method_ = new QComboBox(panel);
  for (const auto& m : available_methods()) {
    method_->addItem(QString::fromStdString(m.name));
    method_->setItemData(method_->count() - 1, QString::fromStdString(m.summary), Qt::ToolTipRole);
  }
  form->addRow("Method", method_);

  grid_lines_ = new QCheckBox("Grid lines", panel);
  connect(grid_lines_, &QCheckBox::toggled, this, [this](bool on) { canvas_->set_grid_lines(on); });
  form->addRow(grid_lines_);

  auto* buttons = new QHBoxLayout;
  generate_ = new QPushButton("Generate", panel);
  generate_->setShortcut(QKeySequence("Ctrl+Return"));
  generate_->setToolTip("Generate (Ctrl+Enter)");
  stop_ = new QPushButton("Stop", panel);
  stop_->setShortcut(QKeySequence("Esc"));
  stop_->setEnabled(false);
  connect(generate_, &QPushButton::clicked, this, &MainWindow::start_generation);
  connect(stop_, &QPushButton::clicked, this, &MainWindow::stop_generation);
  buttons->addWidget(generate_);
  buttons->addWidget(stop_);
  form->addRow(buttons);
  return panel;
}

void MainWindow::set_prompt(const QString& prompt) {
  if (prompt_) prompt_->setText(prompt);
}

void MainWindow::set_seed(int seed) { seed_->setValue(seed); }

void MainWindow::validate_prompt() {
  const std::string problem = prompt_->text().trimmed().isEmpty() ? "" : engine_->check_prompt(prompt_->text().toStdString());
  prompt_problem_->setText(QString::fromStdString(problem));
  generate_->setEnabled(!running_ && problem.empty());
}

GenerateParams MainWindow::request() const {
  GenerateParams p;
  if (prompt_) {
    p.prompt = prompt_->text().trimmed().toStdString();
    if (p.prompt.empty()) p.prompt = prompt_->placeholderText().toStdString();
  } else {
    p.class_id = class_->currentData().toInt();
  }
  p.seed = static_cast<std::uint64_t>(seed_->value());
  p.method = method_->currentText().toStdString();
  p.sampling.cfg_scale = static_cast<float>(cfg_->value());
  p.sampling.temperature = static_cast<float>(temperature_->value());
  p.sampling.top_k = top_k_->value();
  p.sampling.top_p = static_cast<float>(top_p_->value());
  p.preview_every = 8;
  return p;
}

void MainWindow::start_generation() {
  if (running_) return;
  const GenerateParams params = request();
  grid_ = GridState(engine_->info().grid_rows, engine_->info().grid_cols);
  metrics_ = {};
  canvas_->set_grid(grid_);
  canvas_->set_image({});
  status_->setText(QString::fromStdString("Generating: " + params.to_string()));
  set_running(true);
  QMetaObject::invokeMethod(worker_, [worker = worker_, params] { worker->generate(params); }, Qt::QueuedConnection);
}

void MainWindow::stop_generation() {
  if (running_) worker_->cancel();
}

void MainWindow::set_running(bool running) {
  running_ = running;
  stop_->setEnabled(running);
  generate_->setEnabled(!running);
  if (running) frame_timer_->start();
  else frame_timer_->stop();
}

void MainWindow::drain_events() {
  const std::vector<Event> events = worker_->take_events();
  if (events.empty()) return;
  for (const Event& e : events) {
    grid_.apply(e);
    metrics_.apply(e);
  }
  canvas_->set_grid(grid_);
  const RunMetrics& m = metrics_.metrics();
  const int total = grid_.rows() * grid_.cols();
  progress_->setValue(grid_.committed_count());
  if (running_) {
    const double ms_per_token = m.tokens > 0 ? m.wall_ms / m.tokens : 0;
    status_->setText(QString("step %1 · %2/%3 tokens · NFE %4 · ETA %5 s")
                         .arg(grid_.last_step() + 1)
                         .arg(grid_.committed_count())
                         .arg(total)
                         .arg(m.nfe)
                         .arg((total - grid_.committed_count()) * ms_per_token / 1000.0, 0, 'f', 1));
  }
}

void MainWindow::closeEvent(QCloseEvent* event) {
  worker_->cancel();  // the worker sees it within one step; the destructor joins the thread
  event->accept();
}

}  // namespace speculum::ui
