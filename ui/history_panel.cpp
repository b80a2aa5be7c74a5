#include "history_panel.h"

#include <QListWidget>
#include <QVBoxLayout>

namespace speculum::ui {

HistoryPanel::HistoryPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  list_ = new QListWidget(this);
  list_->setViewMode(QListView::IconMode);
  list_->setIconSize(QSize(96, 96));
  list_->setResizeMode(QListView::Adjust);
  list_->setMovement(QListView::Static);
  list_->setWordWrap(true);
  list_->setGridSize(QSize(112, 138));
  list_->setToolTip("Runs since the studio started, newest first; click one to reopen it");
  layout->addWidget(list_);
  connect(list_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) { Q_EMIT reopen_requested(list_->row(item)); });
}

QString HistoryPanel::label(int index) const {
  const Run& r = run(index);
  const RunMetrics& m = r.timeline.metrics();
  return QString("seed %1 · %2 · NFE %3 · %4 ms").arg(r.params.seed).arg(QString::fromStdString(r.params.method)).arg(m.nfe).arg(m.wall_ms, 0, 'f', 0);
}

void HistoryPanel::add(Run run) {
  runs_.push_front(std::move(run));
  if (runs_.size() > kMaxRuns) {
    runs_.pop_back();
    delete list_->takeItem(list_->count() - 1);
  }
  const Run& r = runs_.front();
  const RunMetrics& m = r.timeline.metrics();
  auto* item = new QListWidgetItem(QIcon(QPixmap::fromImage(r.image.scaled(96, 96, Qt::KeepAspectRatio, Qt::FastTransformation))),
                                   QString("seed %1 · %2\n%3 ms").arg(r.params.seed).arg(QString::fromStdString(r.params.method)).arg(m.wall_ms, 0, 'f', 0));
  item->setToolTip(QString::fromStdString(r.params.prompt.empty() ? "class " + std::to_string(r.params.class_id) : r.params.prompt) +
                   "\n" + label(0));
  list_->insertItem(0, item);
}

}  // namespace speculum::ui
