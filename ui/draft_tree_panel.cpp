#include "draft_tree_panel.h"

#include <QPaintEvent>
#include <QPainter>
#include <utility>

#include "token_state_layer.h"

namespace speculum::ui {

namespace {

constexpr int kBoxWidth = 78, kBoxHeight = 34, kColumn = 100, kRow = 40, kMargin = 8;

QColor fate_color(DraftTreePanel::Fate fate) {
  switch (fate) {
    case DraftTreePanel::Fate::Accepted:
      return vis::state_color(CellState::Accepted);
    case DraftTreePanel::Fate::SoftAccepted:
      return vis::state_color(CellState::SoftAccepted);
    case DraftTreePanel::Fate::Rejected:
      return vis::state_color(CellState::Rejected);
    case DraftTreePanel::Fate::Untried:
      break;
  }
  return QColor(128, 128, 128, 60);
}

}  // namespace

DraftTreePanel::DraftTreePanel(QWidget* parent) : QWidget(parent) {
  setMinimumSize(200, 120);
}

void DraftTreePanel::set_step(const std::vector<Event>& step_events) {
  nodes_.clear();
  bonus_token_ = -1;
  bonus_dist_.clear();
  for (const Event& event : step_events) {
    if (const auto* d = std::get_if<Draft>(&event); d && !d->tree_parent.empty()) {
      for (std::size_t i = 0; i < d->tokens.size(); ++i)
        nodes_.push_back({d->tokens[i], i < d->q_of_token.size() ? d->q_of_token[i] : 0.0f, d->tree_parent[i],
                          i < d->tree_depth.size() ? d->tree_depth[i] : 1, Fate::Untried, 0});
    } else if (const auto* v = std::get_if<Verify>(&event)) {
      for (std::size_t i = 0; i < v->nodes.size() && i < v->decisions.size(); ++i) {
        if (v->nodes[i] < 0 || v->nodes[i] >= static_cast<int>(nodes_.size())) continue;
        const Decision d = v->decisions[i];
        nodes_[v->nodes[i]].fate = d == Decision::StrictAccept ? Fate::Accepted
                                   : d == Decision::SoftAccept ? Fate::SoftAccepted
                                                               : Fate::Rejected;
      }
    } else if (const auto* r = std::get_if<Resample>(&event); r && !r->new_tokens.empty()) {
      bonus_token_ = r->new_tokens.front();
      bonus_dist_ = QString::fromStdString(r->dist);
    }
  }
  // Depth-first rows: each subtree occupies consecutive rows under its first child. An explicit stack, not recursion:
  // a trace may hold a chain of 65,536 nodes. Nodes not reachable from the root (parents that name another Draft
  // event's nodes) keep row 0.
  std::vector<std::vector<int>> children(nodes_.size());
  std::vector<int> roots;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const int parent = nodes_[i].parent;
    if (parent == -1) roots.push_back(static_cast<int>(i));
    else if (parent >= 0 && parent < static_cast<int>(nodes_.size())) children[parent].push_back(static_cast<int>(i));
  }
  rows_ = 0;
  depth_ = 0;
  std::vector<std::pair<int, bool>> stack;  // node, whether it is its parent's first child
  const auto push_children = [&](const std::vector<int>& siblings) {
    for (std::size_t k = siblings.size(); k-- > 0;) stack.emplace_back(siblings[k], k == 0);
  };
  push_children(roots);
  while (!stack.empty()) {
    const auto [i, first] = stack.back();
    stack.pop_back();
    if (!first) ++rows_;
    nodes_[i].row = rows_;
    depth_ = std::max(depth_, nodes_[i].depth);
    push_children(children[i]);
  }
  rows_ = nodes_.empty() ? 0 : rows_ + 1;
  updateGeometry();
  resize(sizeHint());
  update();
}

QSize DraftTreePanel::sizeHint() const {
  return {2 * kMargin + (depth_ + 2) * kColumn, 2 * kMargin + std::max(1, rows_) * kRow + 20};
}

void DraftTreePanel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  const QColor text = palette().color(QPalette::WindowText);
  if (nodes_.empty()) {
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
  for (const Node& n : nodes_) {
    const bool has_parent = n.parent >= 0 && n.parent < static_cast<int>(nodes_.size());  // traces are checked; stay safe anyway
    const QRect from = has_parent ? box(nodes_[n.parent].depth, nodes_[n.parent].row) : root;
    const QRect to = box(n.depth, n.row);
    painter.drawLine(from.right(), from.center().y(), to.left(), to.center().y());
  }
  painter.setPen(text);
  painter.drawRect(root);
  painter.drawText(root, Qt::AlignCenter, "last\ncommitted");
  int path_end_depth = 0, path_end_row = 0;
  for (const Node& n : nodes_) {
    const QRect r = box(n.depth, n.row);
    painter.fillRect(r, fate_color(n.fate));
    const bool on_path = n.fate == Fate::Accepted || n.fate == Fate::SoftAccepted;
    painter.setPen(QPen(text, on_path ? 3 : 1));
    painter.drawRect(r);
    painter.setPen(text);
    painter.drawText(r, Qt::AlignCenter, QString("%1\nq %2").arg(n.token).arg(n.q, 0, 'f', 2));
    if (n.fate == Fate::Rejected) {
      painter.setPen(QPen(vis::state_color(CellState::Rejected).darker(150), 2));
      painter.drawLine(r.left() + 4, r.center().y(), r.right() - 4, r.center().y());
    }
    if (on_path && n.depth >= path_end_depth) {
      path_end_depth = n.depth;
      path_end_row = n.row;
    }
  }
  if (bonus_token_ >= 0) {
    const QRect from = path_end_depth == 0 ? root : box(path_end_depth, path_end_row);
    QRect r = box(path_end_depth + 1, path_end_row);
    // The bonus goes after the accepted path; when it would overlap a drafted node, draw it below the tree.
    for (const Node& n : nodes_)
      if (n.depth == path_end_depth + 1 && n.row == path_end_row) r = box(path_end_depth + 1, rows_);
    painter.setPen(QPen(text, 1, Qt::DashLine));
    painter.drawLine(from.right(), from.center().y(), r.left(), r.center().y());
    painter.fillRect(r, vis::origin_color(bonus_dist_ == "residual" ? CellOrigin::Residual : CellOrigin::Target));
    painter.setPen(QPen(text, 2));
    painter.drawRect(r);
    painter.drawText(r, Qt::AlignCenter,
                     QString("%1\n%2").arg(bonus_token_).arg(bonus_dist_ == "residual" ? "residual" : "bonus"));
  }
}

}  // namespace speculum::ui
