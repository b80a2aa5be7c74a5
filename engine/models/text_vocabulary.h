// Word-level prompt tokenisation for text-conditioned bundles: lower-case, split on anything that is
// not a letter, digit, apostrophe or hyphen, look each word up. Unknown words are errors that list the
// nearest known words.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace speculum {

class TextVocabulary {
 public:
  TextVocabulary() = default;
  explicit TextVocabulary(std::vector<std::string> words);

  const std::vector<std::string>& words() const { return words_; }
  static std::vector<std::string> split(const std::string& prompt);
  std::vector<int> encode(const std::string& prompt) const;  // throws speculum::Error
  std::vector<std::string> unknown_words(const std::string& prompt) const;
  std::vector<std::string> nearest(const std::string& word, int count) const;

 private:
  std::vector<std::string> words_;
  std::unordered_map<std::string, int> ids_;
};

}  // namespace speculum
