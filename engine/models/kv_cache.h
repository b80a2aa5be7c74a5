// The target's key/value cache, one batch row per CFG stream (cond, uncond), with the slot bookkeeping
// that speculative methods need: append (done by the forward pass), truncate (drop rejected drafts) and
// compact (move an accepted tree path or scattered accepted slots to the end of the committed prefix).
//
// A cache made with dtype float16 (models whose weights are 16- or 8-bit) rounds every key and value to float16 and
// keeps it twice: in float16, which a decode step's attention reads (half the bytes), and as float32 copies of the
// rounded values, which LibTorch's passes of many tokens multiply without converting the cache on every pass. Both
// hold the same numbers, so a step and a pass still compute the same function (docs/benchmarks/studies.md, "Keys and
// values in f16"). Otherwise keys and values are float32 as computed.
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
  // Slots [0, end) of a layer, float32 [rows, H, end, hd].
  at::Tensor keys(int layer, int end) const { return k_[layer].narrow(2, 0, end); }
  at::Tensor values(int layer, int end) const { return v_[layer].narrow(2, 0, end); }
  bool half_precision() const { return half_; }
  // A layer's whole storage, [rows, H, capacity, hd] contiguous, for the CPU loops that write new slots in place and
  // read them: float32, and with half_precision() the float16 copies as IEEE half bits (a loop writes both, values
  // rounded with round_to_f16).
  float* key_data(int layer) { return k_[layer].data_ptr<float>(); }
  float* value_data(int layer) { return v_[layer].data_ptr<float>(); }
  std::uint16_t* half_key_data(int layer) { return static_cast<std::uint16_t*>(half_k_.at(layer).data_ptr()); }
  std::uint16_t* half_value_data(int layer) { return static_cast<std::uint16_t*>(half_v_.at(layer).data_ptr()); }

  void truncate(int to_length);
  // Slots `keep[i]` (each >= begin and < length) move to `begin + i`; the length becomes
  // begin + keep.size(). Order is the caller's (e.g. root-to-leaf along an accepted tree path).
  void compact(int begin, const std::vector<int>& keep);

 private:
  int rows_;
  int capacity_;
  int length_ = 0;
  bool half_ = false;
  std::vector<at::Tensor> k_, v_;            // per layer [rows, H, capacity, hd], float32
  std::vector<at::Tensor> half_k_, half_v_;  // the same in float16, with half_
  std::vector<std::int64_t> positions_;
  std::vector<char> attendable_;
};

}  // namespace speculum
