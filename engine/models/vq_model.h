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
  // Reads every tensor the config implies from a safetensors file (errors name the file and tensor).
  static VqModel load(VqConfig config, const std::string& weights_file, at::Device device);

  const VqConfig& config() const { return config_; }
  const TensorMap& weights() const { return weights_; }

  at::Tensor decode(const at::Tensor& codes) const;   // -> [B, 3, H, W], clamped to [-1, 1]
  at::Tensor encode(const at::Tensor& images) const;  // -> [B, rows, cols] nearest normalised codes

  // The differentiable pieces, for training: images -> latent z [B, dim, h, w] (after quant_conv),
  // z -> nearest codes, latent -> images (unclamped).
  at::Tensor encode_latent(const at::Tensor& images) const;
  at::Tensor nearest_codes(const at::Tensor& latent) const;  // [B, h, w], by cosine (both L2-normalised)
  at::Tensor code_vectors(const at::Tensor& codes) const;    // [B, dim, h, w] normalised codebook rows
  at::Tensor decode_latent(const at::Tensor& latent) const;
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
