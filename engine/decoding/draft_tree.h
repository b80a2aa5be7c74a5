// A draft tree as a value type (EAGLE-2, research/baselines-models.md A.2.4): nodes with their token,
// parent and depth, the draft probability q of the token under its parent's draft distribution, and the
// cumulative log-score that ranks them. The root (index -1) is the last committed token; node parents
// always precede their children. Gives the target's tree-attention mask and RoPE positions.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace speculum {

struct DraftNode {
  int token = 0;
  int parent = -1;   // -1: a child of the root
  int depth = 1;     // the root's children have depth 1
  float q = 0;       // draft probability of `token` at its parent
  double score = 0;  // sum of log q along the path from the root
};

class DraftTree {
 public:
  int size() const { return static_cast<int>(nodes_.size()); }
  const DraftNode& node(int i) const { return nodes_.at(i); }
  const std::vector<DraftNode>& nodes() const { return nodes_; }
  int add(int token, int parent, float q, double score);
  std::vector<int> children(int parent) const;  // in insertion order (the drafter's rank order)
  std::vector<int> path_to(int node) const;     // root-exclusive, root to node; empty for -1
  int max_depth() const;

  // Keeps the `count` best-scored nodes (ties: earlier first). Scores fall along every path, so the kept
  // set is closed under ancestors; order and parent indices are remapped.
  DraftTree best(int count) const;

  // [1 + N, 1 + N] bool for the target's forward over [root ; nodes]: each node sees the root, its
  // ancestors and itself.
  at::Tensor attend_mask() const;
  // RoPE positions of [root ; nodes]: root_position + depth.
  std::vector<std::int64_t> positions(std::int64_t root_position) const;

 private:
  std::vector<DraftNode> nodes_;
};

}  // namespace speculum
