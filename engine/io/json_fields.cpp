#include "io/json_fields.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "error.h"
#include "io/limits.h"

namespace speculum {
namespace {

int json_depth(const std::string& text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if (ch == '}' || ch == ']') {
      --depth;
    }
  }
  return max_depth;
}

// LibTorch-free DOM building with the checks of untrusted input on the way: a key repeated in one object (nlohmann
// would keep the last silently) and floats past the limits. A SAX handler rather than nlohmann's parser callback:
// the callback parser scans the parent object at every nested object's end, which made a header of 200,000 small
// entries take minutes.
class CheckedDomBuilder : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
 public:
  CheckedDomBuilder(nlohmann::json& result, const std::string& what)
      : json_sax_dom_parser(result, /*allow_exceptions_=*/true), what_(what) {}

  bool start_object(std::size_t elements) {
    keys_.emplace_back();
    return json_sax_dom_parser::start_object(elements);
  }
  bool end_object() {
    keys_.pop_back();
    return json_sax_dom_parser::end_object();
  }
  bool key(nlohmann::json::string_t& name) {
    if (!keys_.back().insert(name).second)
      throw Error(what_ + ": the key '" + short_text(name) + "' appears twice in one object");
    return json_sax_dom_parser::key(name);
  }
  bool number_float(nlohmann::json::number_float_t value, const nlohmann::json::string_t& text) {
    if (!(std::fabs(value) <= limits::kMaxJsonFloat))  // also refuses what overflowed to infinity
      throw Error(what_ + ": the number " + short_text(text) + " is out of range (the limit is ±2^31)");
    return json_sax_dom_parser::number_float(value, text);
  }

 private:
  const std::string& what_;
  std::vector<std::set<std::string>> keys_;  // keys seen in each open object
};

}  // namespace

nlohmann::json parse_untrusted_json(const std::string& text, const std::string& what, int max_depth) {
  if (json_depth(text) > max_depth)
    throw Error(what + ": JSON nests deeper than " + std::to_string(max_depth) + " levels");
  nlohmann::json result;
  CheckedDomBuilder builder(result, what);
  try {
    nlohmann::json::sax_parse(text, &builder);
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + (text.empty() ? ": empty where JSON was expected" : ": not valid UTF-8 JSON: " + user_message(e)));
  }
  return result;
}

std::string short_text(const std::string& text, std::size_t max_chars) {
  std::string out;
  std::size_t chars = 0, i = 0;
  while (i < text.size() && chars < max_chars) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t length = byte < 0x80 ? 1 : (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xE ? 3 : (byte >> 3) == 0x1E ? 4 : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (valid && (length > 1 || (byte >= 0x20 && byte != 0x7F))) {
      out.append(text, i, length);
      i += length;
    } else {  // a control character or a byte that is not UTF-8: shown, never passed on to a terminal or a label
      static const char* const kHex = "0123456789abcdef";
      out += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 0xF];
      ++i;
    }
    ++chars;
  }
  if (i < text.size()) out += "… (" + std::to_string(text.size()) + " bytes)";
  return out;
}

JsonFields::JsonFields(const nlohmann::json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) throw Error(where_ + ": expected a JSON object");
}

const nlohmann::json& JsonFields::field(const std::string& key) const {
  if (!object_.contains(key)) throw Error(where_ + ": missing field '" + key + "'");
  return object_[key];
}

void JsonFields::fail(const std::string& key, const std::string& expected) const {
  throw Error(where_ + ": field '" + key + "' must be " + expected + ", got " + short_text(object_[key].dump()));
}

namespace {

// An integer JSON value that fits an int (unsigned values above 2^63 read as negative through get<long long>).
bool fits_int(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<int>::max());
  return v.is_number_integer() && v.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
         v.get<std::int64_t>() <= std::numeric_limits<int>::max();
}

}  // namespace

int JsonFields::integer(const std::string& key) const {
  const auto& v = field(key);
  if (!fits_int(v)) fail(key, "an integer from " + std::to_string(std::numeric_limits<int>::min()) + " to " +
                                  std::to_string(std::numeric_limits<int>::max()));
  return v.get<int>();
}

int JsonFields::integer(const std::string& key, int fallback) const {
  return has(key) ? integer(key) : fallback;
}

double JsonFields::number(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  if (!object_[key].is_number()) fail(key, "a number");
  return object_[key].get<double>();
}

bool JsonFields::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!object_[key].is_boolean()) fail(key, "true or false");
  return object_[key].get<bool>();
}

std::string JsonFields::string(const std::string& key) const {
  if (!field(key).is_string()) fail(key, "a string");
  return object_[key].get<std::string>();
}

std::vector<int> JsonFields::integers(const std::string& key) const {
  const auto& v = field(key);
  if (!v.is_array()) fail(key, "an array of integers");
  std::vector<int> out;
  for (const auto& e : v) {
    if (!fits_int(e)) fail(key, "an array of integers, each at most " + std::to_string(std::numeric_limits<int>::max()));
    out.push_back(e.get<int>());
  }
  return out;
}

std::vector<std::string> JsonFields::strings(const std::string& key) const {
  const auto& v = field(key);
  if (!v.is_array()) fail(key, "an array of strings");
  std::vector<std::string> out;
  for (const auto& e : v) {
    if (!e.is_string()) fail(key, "an array of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

JsonFields JsonFields::object(const std::string& key) const {
  if (!field(key).is_object()) fail(key, "an object");
  return JsonFields(object_[key], where_ + "." + key);
}

}  // namespace speculum
