// A typed prompt against a text-conditioned bundle's vocabulary: split, encode, and the nearest-word hints that an
// unknown word gets (the studio computes them at every keystroke).
#include <string>

#include "error.h"
#include "models/text_vocabulary.h"

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
  return 0;
}
