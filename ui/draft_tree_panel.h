// The draft tree of the step on show: every node with its token and draft probability q, laid out by
// depth, the accepted path highlighted (soft accepts in their own colour), rejected siblings struck
// through, untried nodes grey, and the bonus token at the path's end. Built from the step's trace events
// (Draft with tree_parent, Verify with nodes, Resample), so a replayed trace shows the same tree.
#pragma once

#include <QWidget>
#include <vector>

#include "draft_tree_layout.h"
#include "speculum_tools.h"

namespace speculum::ui {

class DraftTreePanel : public QWidget {
  Q_OBJECT
 public:
  explicit DraftTreePanel(QWidget* parent = nullptr);
  // The events of one step; a step without a tree draft shows a short note instead.
  void set_step(const std::vector<Event>& step_events);
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  vis::DraftTreeLayout tree_;
};

}  // namespace speculum::ui
