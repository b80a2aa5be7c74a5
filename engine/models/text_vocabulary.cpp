#include "models/text_vocabulary.h"

#include <algorithm>
#include <cctype>

#include "error.h"
#include "io/json_fields.h"

namespace speculum {
namespace {

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

TextVocabulary::TextVocabulary(std::vector<std::string> words) : words_(std::move(words)) {
  for (std::size_t i = 0; i < words_.size(); ++i) ids_.emplace(words_[i], static_cast<int>(i));
}

std::vector<std::string> TextVocabulary::split(const std::string& prompt) {
  std::vector<std::string> words;
  std::string current;
  for (unsigned char ch : prompt) {
    if (std::isalnum(ch) || ch == '\'' || ch == '-' || ch >= 0x80) {
      current += static_cast<char>(std::tolower(ch));
    } else if (!current.empty()) {
      words.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) words.push_back(std::move(current));
  return words;
}

std::vector<std::string> TextVocabulary::unknown_words(const std::string& prompt) const {
  std::vector<std::string> unknown;
  for (const auto& w : split(prompt))
    if (!ids_.count(w)) unknown.push_back(w);
  return unknown;
}

std::vector<std::string> TextVocabulary::nearest(const std::string& word, int count) const {
  std::vector<std::pair<int, const std::string*>> scored;
  for (const auto& w : words_) scored.emplace_back(edit_distance(word, w), &w);
  const auto n = std::min<std::size_t>(count, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + n, scored.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(*scored[i].second);
  return out;
}

std::vector<int> TextVocabulary::encode(const std::string& prompt) const {
  std::vector<int> ids;
  for (const auto& w : split(prompt)) {
    auto it = ids_.find(w);
    if (it == ids_.end()) {
      std::string suggestions;
      for (const auto& s : nearest(w, 5)) suggestions += (suggestions.empty() ? "" : ", ") + s;
      throw Error("unknown word '" + short_text(w, 40) + "' in the prompt; nearest known words: " + suggestions);
    }
    ids.push_back(it->second);
  }
  if (ids.empty()) throw Error("the prompt has no words");
  return ids;
}

}  // namespace speculum
