// Guarded JSON parsing and typed field access whose errors name the document and the field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace speculum {

// Parses untrusted text. Throws Error naming `what` for invalid JSON, nesting deeper than `max_depth`, or a key repeated in one object.
nlohmann::json parse_untrusted_json(const std::string& text, const std::string& what, int max_depth);
// `text`, cut to `max_chars` with its length noted: outside data quoted in a message never floods it.
// Outside text for a message: at most max_chars characters (then "… (N bytes)"), control characters and bytes
// that are not UTF-8 written as \xNN.
std::string short_text(const std::string& text, std::size_t max_chars = 80);

// Reads `object[key]` as the requested type; `where` ("speculum.json: target") prefixes errors.
class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string where);

  bool has(const std::string& key) const { return object_.contains(key); }
  int integer(const std::string& key) const;
  int integer(const std::string& key, int fallback) const;
  double number(const std::string& key, double fallback) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string string(const std::string& key) const;
  std::vector<int> integers(const std::string& key) const;
  std::vector<std::string> strings(const std::string& key) const;
  JsonFields object(const std::string& key) const;

 private:
  const nlohmann::json& field(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;

  const nlohmann::json& object_;
  std::string where_;
};

}  // namespace speculum
