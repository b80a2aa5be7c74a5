// The draft tree of the step on show: every node with its token and draft probability q, laid out by
// depth, the accepted path highlighted (soft accepts in their own colour), rejected siblings struck
// through, untried nodes grey, and the bonus token at the path's end. Built from the step's trace events
// (Draft with tree_parent, Verify with nodes, Resample), so a replayed trace shows the same tree.
#pragma once

#include <QWidget>
#include <vector>

#include "trace/events.h"

namespace speculum::ui {

class DraftTreePanel : public QWidget {
  Q_OBJECT
 public:
  explicit DraftTreePanel(QWidget* parent = nullptr);
  // The events of one step; a step without a tree draft shows a short note instead.
  void set_step(const std::vector<Event>& step_events);
  QSize sizeHint() const override;

  enum class Fate { Untried, Rejected, Accepted, SoftAccepted };
  struct Node {
    int token = 0;
    float q = 0;
    int parent = -1;
    int depth = 1;
    Fate fate = Fate::Untried;
    int row = 0;  // layout row (depth-first order)
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  int bonus_token() const { return bonus_token_; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::vector<Node> nodes_;
  int bonus_token_ = -1;
  QString bonus_dist_;
  int rows_ = 0;
  int depth_ = 0;
};

}  // namespace speculum::ui
