#include "cell_panel.h"

#include <QPainter>
#include <cmath>

#include "token_state_layer.h"

namespace speculum::ui {

namespace {

QString probability(float p) { return QString::number(p, 'f', 3); }

}  // namespace

CellPanel::CellPanel(PatchSource patches, QWidget* parent) : QWidget(parent), patches_(std::move(patches)) { clear(); }

void CellPanel::clear() {
  rows_ = {{"Point at a cell of the image to see what the target wanted there.", -1, -1}};
  update();
}

void CellPanel::show_cell(int row, int col, const CellInfo& info, int vocab_size) {
  rows_.clear();
  QString title = QString("Row %1, column %2: %3").arg(row).arg(col).arg(vis::state_label(info.state));
  if (info.commit_step >= 0) title += QString(" at step %1").arg(info.commit_step + 1);
  rows_.push_back({title, -1, -1});
  if (info.token >= 0)
    rows_.push_back({QString("%1 token %2, p %3 (%4)")
                         .arg(info.state == CellState::Committed ? "Committed" : "Current")
                         .arg(info.token)
                         .arg(info.p < 0 ? QString("—") : probability(info.p))
                         .arg(vis::origin_label(info.origin)),
                     info.token, -1});
  if (info.draft_token >= 0) {
    const bool kept = info.draft_token == info.token && info.origin != CellOrigin::Residual && info.origin != CellOrigin::Target;
    rows_.push_back({QString("Draft proposed token %1, q %2: %3")
                         .arg(info.draft_token)
                         .arg(info.draft_q < 0 ? QString("—") : probability(info.draft_q))
                         .arg(info.times_verified == 0 ? QString("not verified yet") : kept ? QString("kept") : QString("replaced")),
                     info.draft_token, -1});
  } else {
    rows_.push_back({"No draft here: the target drew this token itself.", -1, -1});
  }
  if (info.top_count > 0) {
    QString heading = "The target's most likely tokens here";
    if (info.entropy >= 0 && vocab_size > 1)
      heading += QString(" (entropy %1 nats of ln V = %2)").arg(info.entropy, 0, 'f', 2).arg(std::log(double(vocab_size)), 0, 'f', 2);
    rows_.push_back({heading + ":", -1, -1});
    for (int k = 0; k < info.top_count; ++k) {
      QString text = QString("%1. token %2, p %3").arg(k + 1).arg(info.top_tokens[k]).arg(probability(info.top_p[k]));
      if (info.top_tokens[k] == info.token) text += " ← committed";
      if (info.top_tokens[k] == info.draft_token && info.draft_token != info.token) text += " ← drafted";
      rows_.push_back({text, info.top_tokens[k], info.top_p[k]});
    }
  } else if (info.state != CellState::Committed) {
    rows_.push_back({"The target's distribution is shown once the cell is committed.", -1, -1});
  }
  update();
}

QStringList CellPanel::lines() const {
  QStringList out;
  for (const Row& r : rows_) out << r.text;
  return out;
}

QImage CellPanel::patch(int token) {
  if (!patch_cache_.contains(token)) {
    std::vector<QImage> made = patches_ ? patches_({token}) : std::vector<QImage>{};
    patch_cache_.insert(token, made.empty() ? QImage() : made.front());
  }
  return patch_cache_.value(token);
}

void CellPanel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  const int line = fontMetrics().height(), side = std::max(line + 6, 28), margin = 6;
  int y = margin;
  for (const Row& r : rows_) {
    int x = margin;
    const int height = r.token >= 0 ? side : line;
    if (r.token >= 0) {
      const QImage image = patch(r.token);
      if (!image.isNull()) painter.drawImage(QRect(x, y, side, side), image);  // nearest neighbour: no smoothing
      painter.setPen(palette().mid().color());
      painter.drawRect(QRect(x, y, side, side).adjusted(0, 0, -1, -1));
      x += side + margin;
    }
    painter.setPen(palette().windowText().color());
    const QRect text_rect(x, y, width() - x - margin, height);
    painter.drawText(text_rect, Qt::AlignVCenter | Qt::AlignLeft | Qt::TextSingleLine, r.text);
    if (r.bar >= 0) {
      const int text_width = fontMetrics().horizontalAdvance(r.text) + margin;
      const int bar_room = std::max(0, text_rect.width() - text_width);
      painter.fillRect(QRect(x + text_width, y + height / 2 - 3, int(bar_room * std::clamp(r.bar, 0.0f, 1.0f)), 6),
                       palette().highlight());
    }
    y += height + 4;
  }
}

}  // namespace speculum::ui
