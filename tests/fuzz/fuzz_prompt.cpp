// A typed prompt against a text-conditioned bundle's vocabulary: split, encode, and the nearest-word hints that an
// unknown word gets (the studio computes them at every keystroke); and what a T5 bundle does with it: LlamaGen's
// caption cleaning (regular expressions over the whole text) and T5's SentencePiece tokenizer.
#include <string>

#include "error.h"
#include "io/limits.h"
#include "models/text_vocabulary.h"
#include "text/caption_cleaning.h"
#include "text/t5_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const speculum::TextVocabulary vocabulary({"a", "red", "green", "blue", "yellow", "purple", "orange", "white", "black",
                                                    "circle", "circles", "square", "squares", "triangle", "star", "two", "three",
                                                    "left", "of", "right", "above", "below", "on", "gray", "beige", "teal", "pink",
                                                    "background", "small", "large", "noisy", "striped", "gradient", "o'clock", "t-shirt"});
  const std::string prompt(reinterpret_cast<const char*>(data), size);
  for (const std::string& word : vocabulary.unknown_words(prompt)) vocabulary.nearest(word, 3);
  try {
    vocabulary.encode(prompt);
  } catch (const speculum::Error&) {
  }
  static const speculum::T5Tokenizer t5 = speculum::T5Tokenizer::open(SPECULUM_T5_SPIECE);
  if (prompt.size() <= speculum::limits::kMaxPromptBytes) t5.tokenize(speculum::llamagen_clean_caption(prompt), 120);
  t5.tokenize(prompt, 120);
  return 0;
}
