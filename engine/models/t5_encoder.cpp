#include "models/t5_encoder.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "error.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"

namespace speculum {
namespace {

constexpr const char* kEmbedding = "shared.weight";
constexpr const char* kEncoderEmbedding = "encoder.embed_tokens.weight";  // the same table under its encoder name

bool is_float(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16 || d == DType::F64; }

// Reads the tensors of `specs` from whichever files of the folder hold them, checking name, shape, dtype and values.
class WeightReader {
 public:
  WeightReader(const T5Folder& folder) : folder_(folder) {
    const bool safetensors = folder.layout == T5WeightLayout::Safetensors || folder.layout == T5WeightLayout::ShardedSafetensors;
    for (const std::string& path : folder.weight_files) {
      if (safetensors) {
        auto file = std::make_unique<SafetensorsFile>(SafetensorsFile::open(path));
        for (const TensorInfo& t : file->tensors()) where_[t.name] = {safetensors_.size(), 0};
        safetensors_.push_back(std::move(file));
      } else {
        auto ckpt = std::make_unique<TorchCheckpoint>(TorchCheckpoint::open(path));
        for (const CheckpointTensor& t : ckpt->tensors()) where_[t.name] = {checkpoints_.size(), 1};
        checkpoints_.push_back(std::move(ckpt));
      }
    }
  }

  bool has(const std::string& name) const { return where_.count(name) > 0; }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, place] : where_) out.push_back(name);
    return out;
  }

  at::Tensor read(const std::string& name, const std::vector<std::int64_t>& shape, at::Device device, at::ScalarType type) const {
    const auto it = where_.find(name);
    if (it == where_.end()) {
      std::string file = folder_.dir;
      if (const auto m = folder_.weight_map.find(name); m != folder_.weight_map.end()) file = m->second;
      throw Error("T5 folder '" + folder_.dir + "': tensor '" + name + "' " + shape_to_string(shape) + " is missing from " +
                  (file == folder_.dir ? std::string(t5_layout_name(folder_.layout)) : "'" + file + "'"));
    }
    const auto [index, kind] = it->second;
    DType dtype;
    std::vector<std::int64_t> stored;
    std::string path;
    std::vector<std::uint8_t> bytes;
    const std::uint8_t* data = nullptr;
    if (kind == 0) {
      const SafetensorsFile& f = *safetensors_[index];
      const TensorInfo& t = *f.find(name);
      dtype = t.dtype, stored = t.shape, path = f.path(), data = f.data(t);
    } else {
      const TorchCheckpoint& c = *checkpoints_[index];
      const CheckpointTensor& t = *c.find(name);
      dtype = t.dtype(), stored = t.shape(), path = c.path();
      if (stored == shape && is_float(dtype)) bytes = c.read(t), data = bytes.data();
    }
    if (stored != shape)
      throw Error("'" + path + "': tensor '" + name + "' has shape " + shape_to_string(stored) + "; config.json implies " +
                  shape_to_string(shape));
    if (!is_float(dtype)) throw Error("'" + path + "': tensor '" + name + "' is " + dtype_name(dtype) + " (weights must be F32, F16, BF16 or F64)");
    const at::Tensor view = at::from_blob(const_cast<std::uint8_t*>(data), shape, at::TensorOptions().dtype(to_scalar_type(dtype)));
    at::Tensor out = view.to(device, type, /*non_blocking=*/false, /*copy=*/true).contiguous();
    if (!at::isfinite(out).all().item<bool>()) throw Error("'" + path + "': tensor '" + name + "' holds NaN or infinite values");
    return out;
  }

  DType stored_dtype(const std::string& name) const {
    const auto [index, kind] = where_.at(name);
    return kind == 0 ? safetensors_[index]->find(name)->dtype : checkpoints_[index]->find(name)->dtype();
  }

 private:
  const T5Folder& folder_;
  std::vector<std::unique_ptr<SafetensorsFile>> safetensors_;
  std::vector<std::unique_ptr<TorchCheckpoint>> checkpoints_;
  std::map<std::string, std::pair<std::size_t, int>> where_;  // name -> (file index, 0 safetensors / 1 torch)
};

}  // namespace

T5Encoder::T5Encoder(const T5Folder& folder, at::Device device, std::vector<std::string>* ignored)
    : config_(folder.config), device_(device) {
  const WeightReader reader(folder);
  const std::string embedding = reader.has(kEmbedding) ? kEmbedding : kEncoderEmbedding;
  if (device.is_cuda() && reader.has(embedding)) {
    const DType stored = reader.stored_dtype(embedding);
    if (stored == DType::BF16) compute_type_ = at::kBFloat16;  // f16 overflows in T5's feed-forward: computed in f32
  }
  std::set<std::string> used;
  for (const TensorSpec& spec : t5_encoder_tensor_specs(config_)) {
    const std::string name = spec.name == kEmbedding ? embedding : spec.name;
    const bool norm = name.find("layer_norm") != std::string::npos;
    weights_[spec.name] = reader.read(name, spec.shape, device, norm ? at::kFloat : compute_type_);
    used.insert(name);
  }
  used.insert(kEmbedding);
  used.insert(kEncoderEmbedding);
  if (ignored)
    for (const std::string& name : reader.names())
      if (!used.count(name)) ignored->push_back(name);
}

std::int64_t T5Encoder::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& [name, t] : weights_) n += t.numel();
  return n;
}

at::Tensor T5Encoder::layer_norm(const at::Tensor& x, const at::Tensor& weight) const {
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + config_.layer_norm_epsilon);
  return (weight * normed).to(compute_type_);
}

at::Tensor T5Encoder::position_bias(std::int64_t length) const {
  const auto longs = at::TensorOptions().dtype(at::kLong).device(device_);
  const at::Tensor context = at::arange(length, longs).unsqueeze(1);
  const at::Tensor memory = at::arange(length, longs).unsqueeze(0);
  at::Tensor relative = memory - context;  // key minus query, as transformers' _relative_position_bucket
  const std::int64_t buckets = config_.relative_attention_num_buckets / 2;  // bidirectional: half per direction
  const at::Tensor direction = (relative > 0).to(at::kLong) * buckets;
  relative = relative.abs();
  const std::int64_t max_exact = buckets / 2;
  const at::Tensor large =
      (at::log(relative.clamp_min(1).to(at::kFloat) / static_cast<double>(max_exact)) /
           std::log(static_cast<double>(config_.relative_attention_max_distance) / static_cast<double>(max_exact)) *
           static_cast<double>(buckets - max_exact))
          .to(at::kLong) + max_exact;
  const at::Tensor bucket = direction + at::where(relative < max_exact, relative, large.clamp_max(buckets - 1));
  const at::Tensor& table = weights_.at("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
  return at::embedding(table, bucket).to(at::kFloat).permute({2, 0, 1}).unsqueeze(0);  // [1, H, L, L]
}

at::Tensor T5Encoder::encode(const at::Tensor& ids, const at::Tensor& mask) const {
  if (ids.dim() != 2 || mask.sizes() != ids.sizes()) throw Error("T5 encoder: ids and mask must both be [batch, length]");
  const auto b = ids.size(0), l = ids.size(1);
  const int heads = config_.num_heads, dkv = config_.d_kv;
  if (ids.numel() > 0 && (ids.min().item<std::int64_t>() < 0 || ids.max().item<std::int64_t>() >= config_.vocab_size))
    throw Error("T5 encoder: a token id is outside the vocabulary of " + std::to_string(config_.vocab_size));
  at::Tensor x = at::embedding(weights_.at(kEmbedding), ids.to(device_));
  // transformers adds (1 - mask) * finfo(float32).min to the position bias of every key.
  const at::Tensor key_mask = (1.0 - mask.to(device_, at::kFloat)).mul(std::numeric_limits<float>::lowest()).view({b, 1, 1, l});
  const at::Tensor bias = position_bias(l) + key_mask;
  for (int i = 0; i < config_.num_layers; ++i) {
    const std::string p = "encoder.block." + std::to_string(i) + ".layer.";
    const auto w = [&](const std::string& name) -> const at::Tensor& { return weights_.at(p + name); };
    const at::Tensor h = layer_norm(x, w("0.layer_norm.weight"));
    const auto split = [&](const at::Tensor& t) { return t.view({b, l, heads, dkv}).transpose(1, 2); };
    const at::Tensor q = split(at::linear(h, w("0.SelfAttention.q.weight")));
    const at::Tensor k = split(at::linear(h, w("0.SelfAttention.k.weight")));
    const at::Tensor v = split(at::linear(h, w("0.SelfAttention.v.weight")));
    const at::Tensor scores = at::matmul(q, k.transpose(2, 3)).to(at::kFloat) + bias;  // no 1/sqrt(d_kv): T5 folds it into init
    const at::Tensor attention = at::softmax(scores, -1).to(compute_type_);
    const at::Tensor context = at::matmul(attention, v).transpose(1, 2).reshape({b, l, heads * dkv});
    x = x + at::linear(context, w("0.SelfAttention.o.weight"));
    const at::Tensor g = layer_norm(x, w("1.layer_norm.weight"));
    const auto act = [&](const at::Tensor& t) {
      if (config_.activation == "gelu_new") return at::gelu(t, "tanh");
      if (config_.activation == "gelu") return at::gelu(t);
      if (config_.activation == "silu") return at::silu(t);
      return at::relu(t);
    };
    const at::Tensor inner = config_.gated ? act(at::linear(g, w("1.DenseReluDense.wi_0.weight"))) * at::linear(g, w("1.DenseReluDense.wi_1.weight"))
                                           : act(at::linear(g, w("1.DenseReluDense.wi.weight")));
    x = x + at::linear(inner, w("1.DenseReluDense.wo.weight"));
  }
  return layer_norm(x, weights_.at("encoder.final_layer_norm.weight")).to(at::kFloat);
}

}  // namespace speculum
