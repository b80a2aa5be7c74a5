#include "draft_tree_layout.h"

#include <algorithm>
#include <utility>

namespace speculum::vis {

DraftTreeLayout layout_draft_tree(const std::vector<Event>& step_events) {
  DraftTreeLayout tree;
  auto& nodes = tree.nodes;
  for (const Event& event : step_events) {
    if (const auto* d = std::get_if<Draft>(&event); d && !d->tree_parent.empty()) {
      for (std::size_t i = 0; i < d->tokens.size() && i < d->tree_parent.size(); ++i)
        nodes.push_back({d->tokens[i], i < d->q_of_token.size() ? d->q_of_token[i] : 0.0f, d->tree_parent[i],
                         i < d->tree_depth.size() ? d->tree_depth[i] : 1, Fate::Untried, 0});
    } else if (const auto* v = std::get_if<Verify>(&event)) {
      for (std::size_t i = 0; i < v->nodes.size() && i < v->decisions.size(); ++i) {
        if (v->nodes[i] < 0 || v->nodes[i] >= static_cast<int>(nodes.size())) continue;
        const Decision d = v->decisions[i];
        nodes[v->nodes[i]].fate = d == Decision::StrictAccept ? Fate::Accepted
                                  : d == Decision::SoftAccept ? Fate::SoftAccepted
                                                              : Fate::Rejected;
      }
    } else if (const auto* r = std::get_if<Resample>(&event); r && !r->new_tokens.empty()) {
      tree.bonus_token = r->new_tokens.front();
      tree.bonus_dist = r->dist;
    }
  }
  // An explicit stack, not recursion: a trace may hold a chain of 65,536 nodes.
  std::vector<std::vector<int>> children(nodes.size());
  std::vector<int> roots;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const int parent = nodes[i].parent;
    if (parent == -1) roots.push_back(static_cast<int>(i));
    else if (parent >= 0 && parent < static_cast<int>(nodes.size())) children[parent].push_back(static_cast<int>(i));
  }
  std::vector<std::pair<int, bool>> stack;  // node, whether it is its parent's first child
  const auto push_children = [&](const std::vector<int>& siblings) {
    for (std::size_t k = siblings.size(); k-- > 0;) stack.emplace_back(siblings[k], k == 0);
  };
  push_children(roots);
  int row = 0;
  while (!stack.empty()) {
    const auto [i, first] = stack.back();
    stack.pop_back();
    if (!first) ++row;
    nodes[i].row = row;
    tree.depth = std::max(tree.depth, nodes[i].depth);
    push_children(children[i]);
  }
  tree.rows = nodes.empty() ? 0 : row + 1;
  return tree;
}

}  // namespace speculum::vis
