// The LlamaGen VQ tokenizer (research/baselines-models.md B.2) at any size: encoder, L2-normalised
// codebook, decoder. Images are float [B, 3, H, W] in [-1, 1]; codes are int64 [B, rows, cols].
#pragma once

#include <ATen/ATen.h>

#include "models/model_config.h"
#include "models/tensor_io.h"

namespace speculum {

class VqModel {
 public:
  VqModel(VqConfig config, TensorMap weights, at::Device device);

  const VqConfig& config() const { return config_; }
  const TensorMap& weights() const { return weights_; }

  at::Tensor decode(const at::Tensor& codes) const;   // -> [B, 3, H, W], clamped to [-1, 1]
  at::Tensor encode(const at::Tensor& images) const;  // -> [B, rows, cols] nearest normalised codes
  at::Tensor normalized_codebook() const;             // [codebook_size, codebook_dim]
  // The code closest to the mean of the normalised codebook: fills unknown cells in previews.
  int neutral_code() const { return neutral_code_; }

 private:
  at::Tensor w(const std::string& name) const;
  at::Tensor conv(const at::Tensor& x, const std::string& name, int padding) const;
  at::Tensor norm(const at::Tensor& x, const std::string& name) const;
  at::Tensor resnet(const at::Tensor& x, const std::string& name) const;
  at::Tensor attention(const at::Tensor& x, const std::string& name) const;
  at::Tensor mid(const at::Tensor& x, const std::string& prefix) const;

  VqConfig config_;
  TensorMap weights_;
  at::Device device_;
  int neutral_code_ = 0;
};

}  // namespace speculum
