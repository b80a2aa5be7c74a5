// LlamaGen's text path for its T2I models (language/t5.py's T5Embedder and the caption block of
// autoregressive/sample/sample_t2i.py): clean the prompt, tokenise it to at most `max_tokens` T5 tokens (eos
// included), encode, and left-pad: the padding rows come first and are zero, the valid rows last in order.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/t5_folder.h"
#include "models/t5_encoder.h"
#include "text/t5_tokenizer.h"

namespace speculum {

struct EncodedCaption {
  at::Tensor features;      // [max_tokens, d_model] float32, left-padded with zero rows
  std::vector<char> slots;  // [max_tokens]: which rows hold a token
  std::string text;         // what T5 read (the cleaned prompt)
  TokenizedCaption tokens;
};

class T5Captions {
 public:
  T5Captions(const T5Folder& folder, at::Device device, bool clean, int max_tokens, std::vector<std::string>* ignored = nullptr);

  int max_tokens() const { return max_tokens_; }
  const T5Encoder& encoder() const { return encoder_; }
  const T5Tokenizer& tokenizer() const { return tokenizer_; }
  std::string prepare(const std::string& prompt) const;       // cleaned when the bundle says so (LlamaGen: always)
  TokenizedCaption tokenize(const std::string& prompt) const;  // of the prepared prompt
  EncodedCaption encode(const std::string& prompt) const;

 private:
  T5Tokenizer tokenizer_;
  T5Encoder encoder_;
  bool clean_;
  int max_tokens_;
  // The last prompt prepared: the studio checks and warns at every keystroke, then generates the same text.
  mutable std::mutex last_mutex_;
  mutable std::pair<std::string, std::string> last_prepared_;
};

}  // namespace speculum
