// `mulo`: Multi-Scale Local Speculative Decoding (research/seed-methods.md §4.3, §6.5). A low-resolution
// drafter of the target's architecture drafts a row of the image at 1/r of the grid; the pixel up-sampler
// turns it into r full-resolution rows; one target pass scores every up-sampled cell, which is accepted
// when the target's probability pooled over the cell's token and its k nearest codes reaches τ. Rejected
// cells grow to their (2l+1)² neighbourhood within the block, and the grown region's 8-connected islands
// are resampled from the target, islands side by side (one pass per island position) or one cell after
// another. The block commits; its pixels, shrunk by r and re-encoded, replace the drafted row in the
// drafter's prefix (its cache is rolled back and re-fed). Lossy by design: accepted cells are the
// up-sampler's, not the target's samples.
#pragma once

#include "decoding/method.h"
#include "decoding/pixel_scaler.h"

namespace speculum {

MethodInfo mulo_method_info();

struct MuloParams {
  double tau = 0.01;       // accept a cell when the pooled probability reaches this (0.05 measured slower and worse)
  int neighbours = 20;     // k: nearest codes pooled with the drafted one (0: the drafted token alone)
  int radius = 1;          // l: rejected cells reopen their (2l+1)² neighbourhood within the block
  int rows_per_cycle = 1;  // low-resolution rows drafted per cycle (r times as many full-resolution rows)
  bool parallel_islands = true;
};

class MuloMethod final : public Method {
 public:
  MuloMethod(const Transformer& drafter, const VqModel& tokenizer, const CodebookGeometry& geometry, MuloParams params);
  void run(DecodeSession& session) override;

 private:
  const Transformer& drafter_;
  const VqModel& tokenizer_;
  const CodebookGeometry& geometry_;
  MuloParams params_;
};

std::unique_ptr<Method> make_mulo_method(const MethodOptions& options, const MethodResources& resources);

}  // namespace speculum
