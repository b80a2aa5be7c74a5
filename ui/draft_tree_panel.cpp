#include "draft_tree_panel.h"

#include <QPaintEvent>
#include <QPainter>

#include "token_state_layer.h"

namespace speculum::ui {

namespace {

constexpr int kBoxWidth = 78, kBoxHeight = 34, kColumn = 100, kRow = 40, kMargin = 8;

QColor fate_color(vis::Fate fate) {
  switch (fate) {
    case vis::Fate::Accepted:
      return vis::state_color(CellState::Accepted);
    case vis::Fate::SoftAccepted:
      return vis::state_color(CellState::SoftAccepted);
    case vis::Fate::Rejected:
      return vis::state_color(CellState::Rejected);
    case vis::Fate::Untried:
      break;
  }
  return QColor(128, 128, 128, 60);
}

}  // namespace

DraftTreePanel::DraftTreePanel(QWidget* parent) : QWidget(parent) {
  setMinimumSize(200, 120);
}

void DraftTreePanel::set_step(const std::vector<Event>& step_events) {
  tree_ = vis::layout_draft_tree(step_events);
  updateGeometry();
  resize(sizeHint());
  update();
}

QSize DraftTreePanel::sizeHint() const {
  return {2 * kMargin + (tree_.depth + 2) * kColumn, 2 * kMargin + std::max(1, tree_.rows) * kRow + 20};
}

void DraftTreePanel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  const QColor text = palette().color(QPalette::WindowText);
  const auto& nodes = tree_.nodes;
  if (nodes.empty()) {
    painter.setPen(text);
    painter.drawText(rect().adjusted(kMargin, kMargin, -kMargin, -kMargin), Qt::AlignLeft | Qt::TextWordWrap,
                     "No draft tree in this step (tree methods only: eagle, lantern, lisa).");
    return;
  }
  const auto box = [](int depth, int row) {
    return QRect(kMargin + depth * kColumn, kMargin + row * kRow, kBoxWidth, kBoxHeight);
  };
  const QRect root = box(0, 0);
  // Edges first, so boxes cover their ends.
  painter.setPen(QPen(text, 1));
  for (const vis::DraftTreeNode& n : nodes) {
    const bool has_parent = n.parent >= 0 && n.parent < static_cast<int>(nodes.size());  // traces are checked; stay safe anyway
    const QRect from = has_parent ? box(nodes[n.parent].depth, nodes[n.parent].row) : root;
    const QRect to = box(n.depth, n.row);
    painter.drawLine(from.right(), from.center().y(), to.left(), to.center().y());
  }
  painter.setPen(text);
  painter.drawRect(root);
  painter.drawText(root, Qt::AlignCenter, "last\ncommitted");
  int path_end_depth = 0, path_end_row = 0;
  for (const vis::DraftTreeNode& n : nodes) {
    const QRect r = box(n.depth, n.row);
    painter.fillRect(r, fate_color(n.fate));
    const bool on_path = n.fate == vis::Fate::Accepted || n.fate == vis::Fate::SoftAccepted;
    painter.setPen(QPen(text, on_path ? 3 : 1));
    painter.drawRect(r);
    painter.setPen(text);
    painter.drawText(r, Qt::AlignCenter, QString("%1\nq %2").arg(n.token).arg(n.q, 0, 'f', 2));
    if (n.fate == vis::Fate::Rejected) {
      painter.setPen(QPen(vis::state_color(CellState::Rejected).darker(150), 2));
      painter.drawLine(r.left() + 4, r.center().y(), r.right() - 4, r.center().y());
    }
    if (on_path && n.depth >= path_end_depth) {
      path_end_depth = n.depth;
      path_end_row = n.row;
    }
  }
  if (tree_.bonus_token >= 0) {
    const QRect from = path_end_depth == 0 ? root : box(path_end_depth, path_end_row);
    QRect r = box(path_end_depth + 1, path_end_row);
    // The bonus goes after the accepted path; when it would overlap a drafted node, draw it below the tree.
    for (const vis::DraftTreeNode& n : nodes)
      if (n.depth == path_end_depth + 1 && n.row == path_end_row) r = box(path_end_depth + 1, tree_.rows);
    painter.setPen(QPen(text, 1, Qt::DashLine));
    painter.drawLine(from.right(), from.center().y(), r.left(), r.center().y());
    painter.fillRect(r, vis::origin_color(tree_.bonus_dist == "residual" ? CellOrigin::Residual : CellOrigin::Target));
    painter.setPen(QPen(text, 2));
    painter.drawRect(r);
    painter.drawText(r, Qt::AlignCenter,
                     QString("%1\n%2").arg(tree_.bonus_token).arg(tree_.bonus_dist == "residual" ? "residual" : "bonus"));
  }
}

}  // namespace speculum::ui
