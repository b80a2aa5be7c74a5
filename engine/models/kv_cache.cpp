#include "models/kv_cache.h"

#include <string>

#include "error.h"
#include "models/linear_kernels.h"

namespace speculum {

KVCache::KVCache(int n_layer, int rows, int n_head, int head_dim, int capacity, at::TensorOptions options)
    : rows_(rows), capacity_(capacity), half_(options.dtype() == at::kHalf) {
  if (!half_ && options.dtype() != at::kFloat)
    throw Error(std::string("KV cache: keys and values are stored in float32 or float16, not ") + options.dtype().name().data());
  for (int l = 0; l < n_layer; ++l) {
    k_.push_back(at::zeros({rows, n_head, capacity, head_dim}, options.dtype(at::kFloat)));
    v_.push_back(at::zeros({rows, n_head, capacity, head_dim}, options.dtype(at::kFloat)));
    if (half_) {
      half_k_.push_back(at::zeros({rows, n_head, capacity, head_dim}, options));
      half_v_.push_back(at::zeros({rows, n_head, capacity, head_dim}, options));
    }
  }
}

int KVCache::append_slots(const std::vector<std::int64_t>& positions, const std::vector<char>& attendable) {
  const int n = static_cast<int>(positions.size());
  if (length_ + n > capacity_)
    throw Error("KV cache overflow: " + std::to_string(length_) + " + " + std::to_string(n) + " slots > capacity " +
                std::to_string(capacity_));
  const int begin = length_;
  positions_.insert(positions_.end(), positions.begin(), positions.end());
  if (attendable.empty()) attendable_.insert(attendable_.end(), n, 1);
  else attendable_.insert(attendable_.end(), attendable.begin(), attendable.end());
  length_ += n;
  return begin;
}

namespace {

// Slots [begin, begin + n) of `full` (float32) rounded into `half` (float16) and back. On the CPU each (row, head)'s
// slots are one contiguous run, converted by the vector kernels: LibTorch's strided conversions cost a verification
// pass of 16 tokens a few per cent.
void round_slots(at::Tensor& full, at::Tensor& half, int begin, int n) {
  if (!full.is_cpu()) {
    half.narrow(2, begin, n).copy_(full.narrow(2, begin, n));
    full.narrow(2, begin, n).copy_(half.narrow(2, begin, n));
    return;
  }
  const std::int64_t pairs = full.size(0) * full.size(1), capacity = full.size(2), hd = full.size(3);
  float* f = full.data_ptr<float>();
  auto* h = static_cast<std::uint16_t*>(half.data_ptr());
  for (std::int64_t pair = 0; pair < pairs; ++pair) {
    const std::int64_t first = (pair * capacity + begin) * hd;
    round_to_f16(f + first, n * hd, h + first);
  }
}

}  // namespace

void KVCache::write(int layer, int begin, const at::Tensor& k, const at::Tensor& v) {
  const auto n = k.size(2);
  k_[layer].narrow(2, begin, n).copy_(k);
  v_[layer].narrow(2, begin, n).copy_(v);
  if (half_) {
    round_slots(k_[layer], half_k_[layer], begin, static_cast<int>(n));
    round_slots(v_[layer], half_v_[layer], begin, static_cast<int>(n));
  }
}

void KVCache::truncate(int to_length) {
  if (to_length < 0 || to_length > length_)
    throw Error("KV cache truncate to " + std::to_string(to_length) + " outside [0, " + std::to_string(length_) + "]");
  length_ = to_length;
  positions_.resize(to_length);
  attendable_.resize(to_length);
}

void KVCache::compact(int begin, const std::vector<int>& keep) {
  if (begin < 0 || begin > length_) throw Error("KV cache compact from " + std::to_string(begin) + " out of range");
  for (int slot : keep)
    if (slot < begin || slot >= length_)
      throw Error("KV cache compact: slot " + std::to_string(slot) + " outside [" + std::to_string(begin) + ", " +
                  std::to_string(length_) + ")");
  const int n = static_cast<int>(keep.size());
  if (n > 0) {
    const at::Tensor index =
        at::tensor(std::vector<std::int64_t>(keep.begin(), keep.end()), at::kLong).to(k_.front().device());
    for (std::size_t l = 0; l < k_.size(); ++l) {
      // index_select copies first, so sources and destinations may overlap.
      k_[l].narrow(2, begin, n).copy_(k_[l].index_select(2, index));
      v_[l].narrow(2, begin, n).copy_(v_[l].index_select(2, index));
      if (half_) {
        half_k_[l].narrow(2, begin, n).copy_(half_k_[l].index_select(2, index));
        half_v_[l].narrow(2, begin, n).copy_(half_v_[l].index_select(2, index));
      }
    }
  }
  std::vector<std::int64_t> positions;
  std::vector<char> attendable;
  for (int slot : keep) {
    positions.push_back(positions_[slot]);
    attendable.push_back(attendable_[slot]);
  }
  truncate(begin);
  positions_.insert(positions_.end(), positions.begin(), positions.end());
  attendable_.insert(attendable_.end(), attendable.begin(), attendable.end());
  length_ = begin + n;
}

}  // namespace speculum
