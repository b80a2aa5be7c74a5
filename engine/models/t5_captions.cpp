#include "models/t5_captions.h"

#include "error.h"
#include "io/limits.h"
#include "text/caption_cleaning.h"

namespace speculum {

T5Captions::T5Captions(const T5Folder& folder, at::Device device, bool clean, int max_tokens, std::vector<std::string>* ignored)
    : tokenizer_(T5Tokenizer::open(folder.spiece_path)), encoder_(folder, device, ignored), clean_(clean), max_tokens_(max_tokens) {
  if (tokenizer_.vocab_size() > encoder_.config().vocab_size)
    throw Error("T5 folder '" + folder.dir + "': spiece.model has " + std::to_string(tokenizer_.vocab_size()) +
                " pieces but config.json's vocab_size is " + std::to_string(encoder_.config().vocab_size));
}

std::string T5Captions::prepare(const std::string& prompt) const {
  if (prompt.size() > limits::kMaxPromptBytes)
    throw Error("the prompt is " + std::to_string(prompt.size()) + " bytes; the limit is " + std::to_string(limits::kMaxPromptBytes));
  if (!clean_) return prompt;
  {
    std::lock_guard lock(last_mutex_);
    if (last_prepared_.first == prompt && !prompt.empty()) return last_prepared_.second;
  }
  std::string cleaned = llamagen_clean_caption(prompt);
  std::lock_guard lock(last_mutex_);
  last_prepared_ = {prompt, cleaned};
  return cleaned;
}

TokenizedCaption T5Captions::tokenize(const std::string& prompt) const { return tokenizer_.tokenize(prepare(prompt), max_tokens_); }

EncodedCaption T5Captions::encode(const std::string& prompt) const {
  EncodedCaption out;
  out.text = prepare(prompt);
  out.tokens = tokenizer_.tokenize(out.text, max_tokens_);
  const auto valid = static_cast<std::int64_t>(out.tokens.ids.size());
  std::vector<std::int64_t> ids(out.tokens.ids.begin(), out.tokens.ids.end());
  ids.resize(static_cast<std::size_t>(max_tokens_), tokenizer_.pad_id());
  std::vector<std::int64_t> mask(static_cast<std::size_t>(max_tokens_), 0);
  std::fill(mask.begin(), mask.begin() + valid, 1);
  const at::Tensor hidden = encoder_.encode(at::tensor(ids, at::kLong).unsqueeze(0), at::tensor(mask, at::kLong).unsqueeze(0))[0];
  // sample_t2i.py: rows rotated so the valid ones come last, then multiplied by the flipped mask.
  out.features = at::cat({at::zeros({max_tokens_ - valid, hidden.size(1)}, hidden.options()), hidden.narrow(0, 0, valid)});
  out.slots.assign(static_cast<std::size_t>(max_tokens_), 0);
  std::fill(out.slots.end() - valid, out.slots.end(), 1);
  return out;
}

}  // namespace speculum
