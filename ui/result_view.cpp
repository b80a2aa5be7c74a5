#include "result_view.h"

#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QPixmap>
#include <QScrollArea>
#include <QTableWidget>
#include <QVBoxLayout>

#include "common/speed_quality_chart.h"
#include "speculum.h"
#include "table_height.h"

namespace speculum::ui {
namespace {

QString fixed(double v, int digits) { return QString::number(v, 'f', digits); }

QStringList row_cells(const BenchRow& r) {
  const double paired = 100 * r.vs_ar.difference(), half = 196 * r.vs_ar.standard_error();
  return {QString::fromStdString(r.method),
          QString::number(r.images),
          fixed(r.nfe_per_image(), 1),
          fixed(r.tau(), 2),
          r.drafted ? fixed(100 * r.acceptance(), 1) + " %" : "—",
          fixed(r.ms_per_image.median, 1),
          QString("%1× [%2, %3]").arg(fixed(r.speedup.median, 2), fixed(r.speedup.q1, 2), fixed(r.speedup.q3, 2)),
          r.checked ? QString("%1 % (%2/%3)").arg(fixed(100.0 * r.passed / r.checked, 1)).arg(r.passed).arg(r.checked) : "—",
          r.method == "ar" || !r.checked ? "—" : QString("%1 [%2, %3]").arg(fixed(paired, 1), fixed(paired - half, 1), fixed(paired + half, 1)),
          r.fd_reference ? fixed(*r.fd_reference, 2) : "—",
          r.fd_ar ? fixed(*r.fd_ar, 2) : "—"};
}

}  // namespace

ResultView::ResultView(QWidget* parent) : QWidget(parent) {
  setWindowTitle("Bench result");
  auto* layout = new QVBoxLayout(this);
  title_ = new QLabel(this);
  title_->setWordWrap(true);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(title_);
  table_ = new QTableWidget(0, 11, this);
  table_->setHorizontalHeaderLabels({"method / setting", "images", "NFE / image", "τ", "acceptance", "ms / image", "speed-up vs ar",
                                     "checker passed", "vs ar, points [95 %]", "FD to data", "FD to ar"});
  const QStringList tips = {"", "", "Target forward passes per image (drafter passes not counted)",
                            "Tokens committed per target forward pass", "Accepted draft tokens / verified draft tokens",
                            "Median wall time per image", "Per image: ar's time over this one's; median [interquartile range]",
                            "Images where every claim of the prompt held (the shapes checker)",
                            "Paired difference of pass rates to ar with its 95 % interval (McNemar)",
                            "Fréchet distance to the prompts' own scenes as the tokenizer draws them (lower is closer)",
                            "Fréchet distance to ar's images of the same run"};
  for (int c = 0; c < tips.size(); ++c) table_->horizontalHeaderItem(c)->setToolTip(tips[c]);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  layout->addWidget(table_);
  auto* pictures = new QWidget;
  auto* column = new QVBoxLayout(pictures);  // chart above grid: each as wide as the window allows
  chart_ = new QLabel;
  grid_ = new QLabel;
  for (QLabel* label : {chart_, grid_}) label->setAlignment(Qt::AlignTop | Qt::AlignLeft), column->addWidget(label);
  column->addStretch(1);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(pictures);
  scroll->setWidgetResizable(true);
  layout->addWidget(scroll, 1);
}

void ResultView::open(const QString& path) {
  const BenchRun run = read_bench_run(path.toStdString(), "studio");
  const std::vector<BenchRow> rows = summarize(run);
  title_->setText(QString("<b>%1</b>: %2 prompt(s) × %3 seed(s), bundle %4, %5 thread(s), %6")
                      .arg(QFileInfo(path).fileName().toHtmlEscaped())
                      .arg(run.prompts.size())
                      .arg(run.seeds)
                      .arg(QString::fromStdString(run.bundle).toHtmlEscaped())
                      .arg(run.threads)
                      .arg(QString::fromStdString(run.machine).toHtmlEscaped()));
  table_->setRowCount(static_cast<int>(rows.size()));
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    const QStringList cells = row_cells(rows[static_cast<std::size_t>(r)]);
    for (int c = 0; c < cells.size(); ++c) table_->setItem(r, c, new QTableWidgetItem(cells[c]));
  }
  fit_height_to_rows(table_);
  try {
    chart_->setPixmap(QPixmap::fromImage(app::speed_quality_chart(run, rows)));
  } catch (const Error& e) {
    chart_->setPixmap({});
    chart_->setText(QString("No speed-quality chart: %1").arg(e.what()));
  }
  grid_->setPixmap({});
  grid_->clear();
  if (!run.grid.empty()) {
    const QString grid_path = QFileInfo(path).dir().filePath(QString::fromStdString(run.grid));
    const QPixmap grid(grid_path);
    if (grid.isNull()) grid_->setText("The sweep's grid " + grid_path + " is missing");
    else grid_->setPixmap(grid);
  }
  setWindowTitle("Bench result — " + QFileInfo(path).fileName());
}

bool ResultView::has_chart() const { return !chart_->pixmap().isNull(); }
bool ResultView::has_grid() const { return !grid_->pixmap().isNull(); }

}  // namespace speculum::ui
