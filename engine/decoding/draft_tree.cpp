#include "decoding/draft_tree.h"

#include <algorithm>
#include <numeric>

#include "error.h"

namespace speculum {

int DraftTree::add(int token, int parent, float q, double score) {
  if (parent < -1 || parent >= size()) throw Error("draft tree: parent " + std::to_string(parent) + " does not exist");
  nodes_.push_back({token, parent, parent < 0 ? 1 : nodes_[parent].depth + 1, q, score});
  return size() - 1;
}

std::vector<int> DraftTree::children(int parent) const {
  std::vector<int> out;
  for (int i = 0; i < size(); ++i)
    if (nodes_[i].parent == parent) out.push_back(i);
  return out;
}

std::vector<int> DraftTree::path_to(int node) const {
  std::vector<int> path;
  for (int i = node; i >= 0; i = nodes_.at(i).parent) path.push_back(i);
  std::reverse(path.begin(), path.end());
  return path;
}

int DraftTree::max_depth() const {
  int depth = 0;
  for (const auto& n : nodes_) depth = std::max(depth, n.depth);
  return depth;
}

DraftTree DraftTree::best(int count) const {
  std::vector<int> order(size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return nodes_[a].score > nodes_[b].score; });
  std::vector<char> keep(size(), 0);
  for (int i = 0; i < std::min(count, size()); ++i) keep[order[i]] = 1;
  // A child can tie its parent's score (q = 1); keep ancestors of kept nodes so the set stays a tree.
  for (int i = size() - 1; i >= 0; --i)
    if (keep[i] && nodes_[i].parent >= 0) keep[nodes_[i].parent] = 1;
  DraftTree out;
  std::vector<int> remap(size(), -1);
  for (int i = 0; i < size(); ++i) {
    if (!keep[i]) continue;
    const DraftNode& n = nodes_[i];
    remap[i] = out.add(n.token, n.parent < 0 ? -1 : remap[n.parent], n.q, n.score);
  }
  return out;
}

at::Tensor DraftTree::attend_mask() const {
  const int n = size() + 1;
  at::Tensor mask = at::zeros({n, n}, at::kBool);
  auto m = mask.accessor<bool, 2>();
  m[0][0] = true;
  for (int i = 0; i < size(); ++i) {
    const int row = i + 1, parent_row = nodes_[i].parent + 1;
    for (int j = 0; j < n; ++j) m[row][j] = m[parent_row][j];
    m[row][row] = true;
  }
  return mask;
}

std::vector<std::int64_t> DraftTree::positions(std::int64_t root_position) const {
  std::vector<std::int64_t> out = {root_position};
  for (const auto& n : nodes_) out.push_back(root_position + n.depth);
  return out;
}

}  // namespace speculum
