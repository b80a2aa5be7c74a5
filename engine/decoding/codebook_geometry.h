// The VQ codebook's geometry that relaxed verification uses: each code's nearest other codes (LANTERN's
// latent neighbours, research/baselines-models.md A.3.1) and the whitened codes (LISA's distance,
// seed-methods.md §2.4). Built from the tokenizer's L2-normalised codebook, the vectors the decoder
// actually turns into pixels (LANTERN uses LlamaGen's raw codebook; ours differs on purpose, docs/methods.md).
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace speculum {

class CodebookGeometry {
 public:
  // codes [V, d]; keeps the `max_neighbours` nearest of each code (capped at V - 1).
  CodebookGeometry(const at::Tensor& codes, int max_neighbours);

  int vocab() const { return vocab_; }
  int neighbours() const { return neighbours_; }
  const int* nearest(int code) const { return nearest_.data() + static_cast<std::size_t>(code) * neighbours_; }
  const at::Tensor& whitened() const { return whitened_; }  // [V, d] float, CPU: codes / per-dimension std

 private:
  int vocab_;
  int neighbours_;
  std::vector<int> nearest_;  // [V, neighbours], nearest first, self excluded
  at::Tensor whitened_;
};

}  // namespace speculum
