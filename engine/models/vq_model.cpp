#include "models/vq_model.h"

#include <cmath>

#include "error.h"
#include "io/safetensors.h"

namespace speculum {
namespace {
constexpr double kNormEps = 1e-6;
}

VqModel::VqModel(VqConfig config, TensorMap weights, at::Device device)
    : config_(std::move(config)), weights_(std::move(weights)), device_(device) {
  validate_config(config_);
  for (auto& [name, t] : weights_) t = t.to(device_);
  const at::Tensor book = normalized_codebook();
  const at::Tensor mean = book.mean(0, true);
  neutral_code_ = static_cast<int>((book - mean).pow(2).sum(1).argmin().item<std::int64_t>());
}

VqModel VqModel::load(VqConfig config, const std::string& weights_file, at::Device device) {
  TensorMap weights = load_tensors(SafetensorsFile::open(weights_file), vq_tensor_specs(config), device);
  return VqModel(std::move(config), std::move(weights), device);
}

at::Tensor VqModel::w(const std::string& name) const { return find_tensor(weights_, name, "tokenizer"); }

at::Tensor VqModel::conv(const at::Tensor& x, const std::string& name, int padding) const {
  const std::vector<std::int64_t> stride = {1, 1}, pad = {padding, padding};
  return at::conv2d(x, w(name + ".weight"), w(name + ".bias"), stride, pad);
}

at::Tensor VqModel::norm(const at::Tensor& x, const std::string& name) const {
  return at::group_norm(x, config_.norm_groups, w(name + ".weight"), w(name + ".bias"), kNormEps);
}

at::Tensor VqModel::resnet(const at::Tensor& x, const std::string& name) const {
  at::Tensor h = conv(at::silu(norm(x, name + ".norm1")), name + ".conv1", 1);
  h = conv(at::silu(norm(h, name + ".norm2")), name + ".conv2", 1);
  const bool projects = weights_.count(name + ".nin_shortcut.weight") > 0;
  return (projects ? conv(x, name + ".nin_shortcut", 0) : x) + h;
}

// Single-head attention over all h*w positions with 1x1 convolutions, as LlamaGen's AttnBlock.
at::Tensor VqModel::attention(const at::Tensor& x, const std::string& name) const {
  const at::Tensor h = norm(x, name + ".norm");
  const auto b = x.size(0), c = x.size(1), hh = x.size(2), ww = x.size(3);
  const at::Tensor q = conv(h, name + ".q", 0).reshape({b, c, hh * ww}).permute({0, 2, 1});
  const at::Tensor k = conv(h, name + ".k", 0).reshape({b, c, hh * ww});
  const at::Tensor v = conv(h, name + ".v", 0).reshape({b, c, hh * ww});
  const at::Tensor attn = at::softmax(at::bmm(q, k) / std::sqrt(static_cast<double>(c)), 2);
  const at::Tensor out = at::bmm(v, attn.permute({0, 2, 1})).reshape({b, c, hh, ww});
  return x + conv(out, name + ".proj_out", 0);
}

at::Tensor VqModel::mid(const at::Tensor& x, const std::string& prefix) const {
  return resnet(attention(resnet(x, prefix + ".mid.0"), prefix + ".mid.1"), prefix + ".mid.2");
}

at::Tensor VqModel::normalized_codebook() const {
  const at::Tensor book = w("quantize.embedding.weight");
  return book / book.norm(2, 1, true).clamp_min(1e-12);
}

at::Tensor VqModel::code_vectors(const at::Tensor& codes) const {
  const at::Tensor z = normalized_codebook().index_select(0, codes.reshape({-1}).to(device_, at::kLong));
  return z.reshape({codes.size(0), codes.size(1), codes.size(2), config_.codebook_dim}).permute({0, 3, 1, 2});
}

at::Tensor VqModel::decode(const at::Tensor& codes) const {
  if (codes.dim() != 3) throw Error("VQ decode expects codes [B, rows, cols]");
  if (codes.numel() > 0 && (codes.min().item<std::int64_t>() < 0 || codes.max().item<std::int64_t>() >= config_.codebook_size))
    throw Error("VQ decode: a code is outside [0, " + std::to_string(config_.codebook_size) + ")");
  return decode_latent(code_vectors(codes)).clamp(-1.0, 1.0);
}

at::Tensor VqModel::decode_latent(const at::Tensor& latent) const {
  const int levels = static_cast<int>(config_.ch_mult.size());
  at::Tensor h = conv(conv(latent, "post_quant_conv", 0), "decoder.conv_in", 1);
  h = mid(h, "decoder");
  for (int level = 0; level < levels; ++level) {
    const std::string p = "decoder.conv_blocks." + std::to_string(level);
    for (int j = 0; j < config_.num_res_blocks + 1; ++j) {
      h = resnet(h, p + ".res." + std::to_string(j));
      if (level == 0) h = attention(h, p + ".attn." + std::to_string(j));
    }
    if (level != levels - 1) h = conv(at::upsample_nearest2d(h, {h.size(2) * 2, h.size(3) * 2}), p + ".upsample.conv", 1);
  }
  return conv(at::silu(norm(h, "decoder.norm_out")), "decoder.conv_out", 1);
}

at::Tensor VqModel::encode(const at::Tensor& images) const { return nearest_codes(encode_latent(images)); }

at::Tensor VqModel::encode_latent(const at::Tensor& images) const {
  if (!config_.has_encoder) throw Error("this tokenizer was shipped without its encoder");
  if (images.dim() != 4 || images.size(1) != 3) throw Error("VQ encode expects images [B, 3, H, W]");
  const int levels = static_cast<int>(config_.ch_mult.size());
  at::Tensor h = conv(images.to(device_, at::kFloat), "encoder.conv_in", 1);
  for (int level = 0; level < levels; ++level) {
    const std::string p = "encoder.conv_blocks." + std::to_string(level);
    for (int j = 0; j < config_.num_res_blocks; ++j) {
      h = resnet(h, p + ".res." + std::to_string(j));
      if (level == levels - 1) h = attention(h, p + ".attn." + std::to_string(j));
    }
    if (level != levels - 1) {  // LlamaGen's Downsample: asymmetric pad (0, 1, 0, 1), 3x3 stride 2
      const std::vector<std::int64_t> stride = {2, 2}, pad = {0, 0};
      h = at::conv2d(at::constant_pad_nd(h, {0, 1, 0, 1}), w(p + ".downsample.conv.weight"),
                     w(p + ".downsample.conv.bias"), stride, pad);
    }
  }
  h = mid(h, "encoder");
  return conv(conv(at::silu(norm(h, "encoder.norm_out")), "encoder.conv_out", 1), "quant_conv", 0);
}

at::Tensor VqModel::nearest_codes(const at::Tensor& latent) const {
  const auto b = latent.size(0), rows = latent.size(2), cols = latent.size(3);
  at::Tensor z = latent.permute({0, 2, 3, 1}).reshape({-1, config_.codebook_dim});
  z = z / z.norm(2, 1, true).clamp_min(1e-12);
  // argmin |z - e|^2 over unit vectors = argmax z . e
  return at::matmul(z, normalized_codebook().t()).argmax(1).reshape({b, rows, cols});
}

}  // namespace speculum
