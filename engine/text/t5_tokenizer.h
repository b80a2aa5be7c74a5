// T5's tokenizer: the SentencePiece model of a Hugging Face T5 folder (`spiece.model`), read through Debian's
// libsentencepiece (behind text/sentencepiece_shim.h), with the conventions of transformers' T5Tokenizer: no bos, pieces cut to leave room for the
// eos, then `</s>`. Torch-free.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace speculum {

class SentencePieceShim;

struct TokenizedCaption {
  std::vector<int> ids;      // at most max_tokens, ending with the eos
  int pieces = 0;            // pieces of the whole text, before the cut
  std::string dropped_text;  // the text of the pieces cut off (empty when everything fits)
};

class T5Tokenizer {
 public:
  // Reads `path` (a regular file within limits::kMaxSentencePieceBytes); throws Error naming it when it is not a
  // SentencePiece model or has no `</s>` piece.
  static T5Tokenizer open(const std::string& path);

  std::vector<int> encode(const std::string& text) const;  // the pieces' ids, no eos
  std::vector<std::string> pieces(const std::string& text) const;
  // What transformers' tokenizer(text, max_length=max_tokens, truncation=True) returns.
  TokenizedCaption tokenize(const std::string& text, int max_tokens) const;
  int vocab_size() const;
  int eos_id() const { return eos_id_; }
  int pad_id() const { return pad_id_; }

 private:
  std::shared_ptr<const SentencePieceShim> processor_;
  int eos_id_ = 1;
  int pad_id_ = 0;
};

}  // namespace speculum
