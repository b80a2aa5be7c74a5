// The draft tree of one step, laid out for drawing: every node of the step's tree Draft with its token and draft
// probability q, its fate from the step's Verify (accepted, soft-accepted, rejected, untried), a depth-first row, and
// the bonus token from Resample. Built from trace events only, so a replayed trace lays out the same tree; the
// draft tree panel draws it.
#pragma once

#include <string>
#include <vector>

#include "trace/events.h"

namespace speculum::vis {

enum class Fate { Untried, Rejected, Accepted, SoftAccepted };

struct DraftTreeNode {
  int token = 0;
  float q = 0;
  int parent = -1;  // -1: the last committed token
  int depth = 1;
  Fate fate = Fate::Untried;
  int row = 0;  // depth-first: each subtree takes consecutive rows under its first child
};

struct DraftTreeLayout {
  std::vector<DraftTreeNode> nodes;  // empty: the step drafted no tree
  int rows = 0;                      // rows taken (0 without nodes)
  int depth = 0;                     // deepest node
  int bonus_token = -1;              // the token sampled after the accepted path, or -1
  std::string bonus_dist;            // its distribution ("target", "residual", ...)
};

// The events of one step (StepBegin .. StepEnd). Nodes not reachable from the root (a parent naming another Draft
// event's nodes) keep row 0.
DraftTreeLayout layout_draft_tree(const std::vector<Event>& step_events);

}  // namespace speculum::vis
