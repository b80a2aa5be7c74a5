// `ssd`: Spatially Speculative Decoding (research/seed-methods.md §3.4, §6.4). Row 0 is drafted in chunks
// along the row by the horizontal heads from the last committed cell; every later block of `vertical` rows
// is drafted at once, each cell by a vertical head from the committed cell above it. A block is verified
// in rounds of one target forward: each tested cell independently with min(1, p/q), a rejected cell
// replaced from the residual; the next round redraws and re-tests the cells after the first replaced one
// (their context changed). A commit pass then feeds the final block and gives the features the next heads
// read; with early_stop, a round that replaces nothing is itself the commit. Steps per vertical block: at
// most rounds + 1 (exactly that without early_stop). Exact once the rounds outnumber a block's cells (in
// practice: once a round replaces nothing); lossy when rounds run out first; rounds = 0 commits the drafts
// unverified. With `vertical` = 2, STAGED(b, i) commits a block's first row after b rounds and gives the second
// i more rounds: b + i + 2 steps per block at most.
#pragma once

#include "decoding/method.h"
#include "models/spatial_heads.h"

namespace speculum {

MethodInfo ssd_method_info();

struct SsdParams {
  int horizontal = 5;  // row 0: cells drafted per chunk
  int vertical = 1;    // rows drafted per block
  int rounds = 2;      // verify-and-correct rounds per vertical block
  int row0_rounds = 1;
  bool early_stop = true;
  bool staged = false;  // blocks of two rows: STAGED(b, i) instead of JOINT (a one-row block is always joint)
  int staged_b = 1;
  int staged_i = 1;
};

class SsdMethod final : public Method {
 public:
  SsdMethod(const SpatialHeads& heads, SsdParams params);
  int extra_cache_slots() const override { return 0; }
  void run(DecodeSession& session) override;

 private:
  const SpatialHeads& heads_;
  SsdParams params_;
};

std::unique_ptr<Method> make_ssd_method(const MethodOptions& options, const MethodResources& resources);

}  // namespace speculum
