// Pieces shared by the GPT's blocks, the drafter's block and the caption encoder's: the attention mask
// value, RMSNorm, the SwiGLU feed-forward, one pre-norm decoder layer over a KV cache, and the additive
// visibility bias of new tokens over the cache.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "models/kv_cache.h"
#include "models/linear.h"
#include "models/tensor_io.h"

namespace speculum {

// Additive attention bias of a hidden key. Finite, so a query with no visible key yields a uniform row
// instead of NaN.
constexpr float kMaskedOut = -1e9f;

// x / rms(x) * weight, computed in float32 whatever x's dtype.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// w2 · (silu(w1 · h) ⊙ w3 · h)
at::Tensor swiglu(const at::Tensor& h, const LinearWeight& w1, const LinearWeight& w3, const LinearWeight& w2);

// One LlamaGen decoder layer's weights. An undefined attention_norm means no input norm (the EAGLE
// drafter's single layer, whose input is already a fused feature).
struct DecoderLayer {
  LinearWeight wqkv, wo, w1, w2, w3;
  at::Tensor attention_norm, ffn_norm;
};

// `<prefix>attention.wqkv.weight`, ... of `weights` (LlamaGen's names), the matrices in `format`; `owner` names
// the model in errors. Without `with_attention_norm` the layer takes its input as it is.
DecoderLayer decoder_layer_weights(const TensorMap& weights, const std::string& prefix, const char* owner,
                                   bool with_attention_norm = true, WeightFormat format = WeightFormat::F32);

// The names of a decoder layer's matrices under `prefix` (what decoder_layer_weights converts).
std::vector<std::string> decoder_layer_matrix_names(const std::string& prefix);

// x [rows, N, dim] through one layer with 2D RoPE rows `rope` [N, hd/2, 2]. With a cache, keys and values
// go to slots [begin, begin + N) of layer `cache_layer` and attention spans the cache; else it spans x.
// `bias` broadcasts to [rows, heads, N, keys].
at::Tensor decoder_layer(const at::Tensor& x, const DecoderLayer& layer, int heads, double norm_eps,
                         const at::Tensor& rope, const at::Tensor& bias, KVCache* cache, int cache_layer, int begin);

// Additive bias [N, begin + N] of N new tokens in slots [begin, begin + N) of `cache`: a new token sees
// every attendable earlier slot and itself; `attend` [N, M] bool (default: causal [N, N]) further
// restricts the last M slots, so a draft tree grown over several calls sees only its own ancestors.
// [1, begin + 1] for a single token without `attend`.
at::Tensor visibility_bias(const KVCache& cache, int begin, int n, const at::Tensor& attend, at::Device device);

}  // namespace speculum
