// The caption encoder of text-conditioned targets: word embeddings made contextual (GptConfig's comment
// says why LlamaGen's prefix needs that) by word-order embeddings and bidirectional pre-norm blocks.
#pragma once

#include <ATen/ATen.h>

#include "models/model_config.h"
#include "models/tensor_io.h"

namespace speculum {

// `features` [B, L, caption_dim]: the word embeddings, left-padded; `words` [B, L] bool: which slots hold
// a word. Returns [B, L, caption_dim]; with text_encoder_layers == 0, `features` unchanged. Word k of a
// caption gets order embedding k wherever the padding puts it, and attends to every word of its caption.
at::Tensor encode_caption(const GptConfig& config, const TensorMap& weights, const at::Tensor& features, const at::Tensor& words);

}  // namespace speculum
