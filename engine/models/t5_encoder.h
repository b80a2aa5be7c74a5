// The T5 v1.1 / Flan-T5 encoder (transformers' T5EncoderModel) in LibTorch, from a Hugging Face folder:
// unscaled shared embedding; per block RMS layer norm (no mean, no bias, variance in float32), self-attention
// without 1/sqrt(d) and with the bidirectional relative-position bias that block 0 stores and every block reuses,
// the (gated) feed-forward; final layer norm.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "io/t5_folder.h"
#include "models/tensor_io.h"

namespace speculum {

class T5Encoder {
 public:
  // Reads the encoder's tensors from the folder's weights (any of the four layouts) onto `device`. Weights are
  // computed in float32 on the CPU (LibTorch's bf16 matrix products are several times slower there) and kept as
  // stored (bf16/f16) on CUDA. `ignored` receives the names present but not used (a full T5's decoder, lm_head).
  T5Encoder(const T5Folder& folder, at::Device device, std::vector<std::string>* ignored = nullptr);

  const T5Config& config() const { return config_; }
  at::ScalarType compute_type() const { return compute_type_; }
  std::int64_t parameter_count() const;

  // ids [B, L] int64, mask [B, L] (1 = token, 0 = padding) -> last_hidden_state [B, L, d_model] float32.
  at::Tensor encode(const at::Tensor& ids, const at::Tensor& mask) const;

 private:
  at::Tensor position_bias(std::int64_t length) const;  // [1, heads, L, L] float32
  at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& weight) const;

  T5Config config_;
  at::Device device_;
  at::ScalarType compute_type_ = at::kFloat;
  TensorMap weights_;
};

}  // namespace speculum
