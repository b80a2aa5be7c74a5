// The target's key/value cache, one batch row per CFG stream (cond, uncond), with the slot bookkeeping
// that speculative methods need: append (done by the forward pass), truncate (drop rejected drafts) and
// compact (move an accepted tree path or scattered accepted slots to the end of the committed prefix).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace speculum {

class KVCache {
 public:
  KVCache(int n_layer, int rows, int n_head, int head_dim, int capacity, at::TensorOptions options);

  int length() const { return length_; }
  int capacity() const { return capacity_; }
  int rows() const { return rows_; }
  // Per slot: the RoPE position of its token and whether later queries may attend to it (false for
  // padded caption slots).
  const std::vector<std::int64_t>& positions() const { return positions_; }
  const std::vector<char>& attendable() const { return attendable_; }

  // Reserves `positions.size()` slots after the current length; returns the first one.
  int append_slots(const std::vector<std::int64_t>& positions, const std::vector<char>& attendable);
  void write(int layer, int begin, const at::Tensor& k, const at::Tensor& v);  // [rows, H, N, hd]
  at::Tensor keys(int layer, int end) const { return k_[layer].narrow(2, 0, end); }
  at::Tensor values(int layer, int end) const { return v_[layer].narrow(2, 0, end); }
  // A layer's whole storage, [rows, H, capacity, hd] contiguous, for the CPU loops that write new slots in place
  // (float32 caches on the CPU only).
  float* key_data(int layer) { return k_[layer].data_ptr<float>(); }
  float* value_data(int layer) { return v_[layer].data_ptr<float>(); }

  void truncate(int to_length);
  // Slots `keep[i]` (each >= begin and < length) move to `begin + i`; the length becomes
  // begin + keep.size(). Order is the caller's (e.g. root-to-leaf along an accepted tree path).
  void compact(int begin, const std::vector<int>& keep);

 private:
  int rows_;
  int capacity_;
  int length_ = 0;
  std::vector<at::Tensor> k_, v_;  // per layer [rows, H, capacity, hd]
  std::vector<std::int64_t> positions_;
  std::vector<char> attendable_;
};

}  // namespace speculum
