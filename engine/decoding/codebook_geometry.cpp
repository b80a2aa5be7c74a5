#include "decoding/codebook_geometry.h"

#include <algorithm>

#include "error.h"

namespace speculum {

CodebookGeometry::CodebookGeometry(const at::Tensor& codes, int max_neighbours) {
  const at::Tensor c = codes.to(at::kCPU, at::kFloat).contiguous();
  vocab_ = static_cast<int>(c.size(0));
  if (vocab_ < 2) throw Error("the codebook needs at least two codes");
  neighbours_ = std::clamp(max_neighbours, 1, vocab_ - 1);
  nearest_.resize(static_cast<std::size_t>(vocab_) * neighbours_);
  constexpr int kChunk = 1024;  // bounds the distance block for large codebooks (16384² floats would be 1 GiB)
  for (int begin = 0; begin < vocab_; begin += kChunk) {
    const int n = std::min(kChunk, vocab_ - begin);
    at::Tensor d = at::cdist(c.narrow(0, begin, n), c);
    d.narrow(1, begin, n).diagonal().fill_(INFINITY);  // self excluded
    const at::Tensor order =
        std::get<1>(at::topk(d, neighbours_, -1, /*largest=*/false, /*sorted=*/true)).to(at::kInt).contiguous();
    std::copy_n(order.data_ptr<int>(), static_cast<std::size_t>(n) * neighbours_,
                nearest_.begin() + static_cast<std::size_t>(begin) * neighbours_);
  }
  whitened_ = c / c.std(0, /*unbiased=*/true).clamp_min(1e-6);
}

}  // namespace speculum
