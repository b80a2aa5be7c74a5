#include "text/caption_cleaning.h"

#include <cwctype>
#include <locale>
#include <map>
#include <regex>
#include <string_view>

#include "text/utf8.h"

namespace speculum {
namespace {

// Python's re on str is Unicode-aware (\w matches 'é'); std::wregex classifies through its locale, so the
// patterns run under C.UTF-8 where glibc's tables classify every code point. Falls back to the classic locale.
const std::locale& unicode_locale() {
  static const std::locale locale = [] {
    for (const char* name : {"C.UTF-8", "C.utf8", "en_US.UTF-8"}) {
      try {
        return std::locale(name);
      } catch (const std::runtime_error&) {
      }
    }
    return std::locale::classic();
  }();
  return locale;
}

// A Python pattern (re.sub semantics: leftmost, non-overlapping) as an ECMAScript wregex in the Unicode locale.
struct Pattern {
  std::wregex regex;
  explicit Pattern(const wchar_t* python_pattern) {
    regex.imbue(unicode_locale());
    regex.assign(python_pattern, std::regex::ECMAScript | std::regex::optimize);
  }
};

std::wstring sub(const std::wstring& text, const Pattern& pattern, const wchar_t* replacement) {
  return std::regex_replace(text, pattern.regex, replacement);
}

// urllib.parse.unquote_plus on the UTF-8 bytes: '+' is a space, %XX a byte.
std::string unquote_plus(const std::string& text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::wstring lower(std::wstring text) {
  const auto& ctype = std::use_facet<std::ctype<wchar_t>>(unicode_locale());
  for (wchar_t& c : text) c = ctype.tolower(c);
  return text;
}

// The named references that occur in captions (HTML5 defines ~2,200; the rest stay as written).
const std::map<std::wstring, wchar_t>& named_entities() {
  static const std::map<std::wstring, wchar_t> names = {
      {L"amp", L'&'},       {L"lt", L'<'},         {L"gt", L'>'},        {L"quot", L'"'},      {L"apos", L'\''},
      {L"nbsp", 0xA0},      {L"copy", 0xA9},       {L"reg", 0xAE},       {L"trade", 0x2122},   {L"hellip", 0x2026},
      {L"mdash", 0x2014},   {L"ndash", 0x2013},    {L"lsquo", 0x2018},   {L"rsquo", 0x2019},   {L"ldquo", 0x201C},
      {L"rdquo", 0x201D},   {L"laquo", 0xAB},      {L"raquo", 0xBB},     {L"deg", 0xB0},       {L"times", 0xD7},
      {L"middot", 0xB7},    {L"bull", 0x2022},     {L"euro", 0x20AC},    {L"pound", 0xA3},     {L"cent", 0xA2},
      {L"yen", 0xA5},       {L"sect", 0xA7},       {L"para", 0xB6},      {L"frac12", 0xBD},    {L"frac14", 0xBC},
      {L"frac34", 0xBE},    {L"eacute", 0xE9},     {L"egrave", 0xE8},    {L"aacute", 0xE1},    {L"agrave", 0xE0},
      {L"uuml", 0xFC},      {L"ouml", 0xF6},       {L"auml", 0xE4},      {L"ccedil", 0xE7},    {L"ntilde", 0xF1},
      {L"iuml", 0xEF},      {L"szlig", 0xDF},
  };
  return names;
}

// html.unescape: numeric references (decimal, hex) and the named ones above, ';' optional as in HTML5 for these.
std::wstring html_unescape(const std::wstring& text) {
  std::wstring out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] != L'&') {
      out += text[i++];
      continue;
    }
    std::size_t j = i + 1;
    if (j < text.size() && text[j] == L'#') {
      const bool hexadecimal = j + 1 < text.size() && (text[j + 1] == L'x' || text[j + 1] == L'X');
      std::size_t k = j + (hexadecimal ? 2 : 1);
      unsigned long value = 0;
      const std::size_t digits_begin = k;
      while (k < text.size() && k - digits_begin < 8 &&
             (hexadecimal ? std::iswxdigit(static_cast<wint_t>(text[k])) : (text[k] >= L'0' && text[k] <= L'9'))) {
        const wchar_t c = text[k];
        value = value * (hexadecimal ? 16 : 10) + static_cast<unsigned long>(c <= L'9' ? c - L'0' : (c | 0x20) - L'a' + 10);
        ++k;
      }
      if (k == digits_begin) {
        out += text[i++];
        continue;
      }
      if (k < text.size() && text[k] == L';') ++k;
      // Python maps 0, surrogates and values past U+10FFFF to U+FFFD.
      const bool valid = value > 0 && value <= 0x10FFFF && !(value >= 0xD800 && value <= 0xDFFF);
      out += valid ? static_cast<wchar_t>(value) : static_cast<wchar_t>(0xFFFD);
      i = k;
      continue;
    }
    std::size_t k = j;
    while (k < text.size() && k - j < 32 && std::iswalnum(static_cast<wint_t>(text[k]))) ++k;
    const auto found = named_entities().find(text.substr(j, k - j));
    if (found == named_entities().end()) {
      out += text[i++];
      continue;
    }
    out += found->second;
    i = k < text.size() && text[k] == L';' ? k + 1 : k;
  }
  return out;
}

// BeautifulSoup(caption, "html.parser").text: comments and tags dropped, character references decoded.
std::wstring html_text(const std::wstring& caption) {
  static const Pattern comments(L"<!--[\\s\\S]*?-->");
  static const Pattern tags(L"</?[a-zA-Z!][^<>]*>");
  return html_unescape(sub(sub(caption, comments, L""), tags, L""));
}

// ftfy.fix_text on text that is not mojibake: HTML references (when no '<' is present), Latin ligatures,
// full-width forms, curly quotes, line breaks and control characters.
std::wstring fix_text(std::wstring text) {
  if (text.find(L'<') == std::wstring::npos) text = html_unescape(text);
  static const std::map<wchar_t, std::wstring> ligatures = {
      {0xFB00, L"ff"}, {0xFB01, L"fi"}, {0xFB02, L"fl"}, {0xFB03, L"ffi"}, {0xFB04, L"ffl"}, {0xFB05, L"ft"}, {0xFB06, L"st"}};
  std::wstring out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const wchar_t c = text[i];
    if (const auto it = ligatures.find(c); it != ligatures.end()) {
      out += it->second;
    } else if (c >= 0xFF01 && c <= 0xFF5E) {
      out += static_cast<wchar_t>(c - 0xFF01 + 0x21);
    } else if (c == 0x3000) {
      out += L' ';
    } else if (c == 0x2018 || c == 0x2019 || c == 0x201A || c == 0x201B) {
      out += L'\'';
    } else if (c == 0x201C || c == 0x201D || c == 0x201E || c == 0x201F) {
      out += L'"';
    } else if (c == L'\r') {
      out += L'\n';
      if (i + 1 < text.size() && text[i + 1] == L'\n') ++i;
    } else if (c == 0x2028 || c == 0x2029 || c == 0x85) {
      out += L'\n';
    } else if ((c >= 0 && c <= 8) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F) {
      // removed, as ftfy's remove_control_chars does
    } else {
      out += c;
    }
  }
  return out;
}

std::wstring strip(const std::wstring& text) {
  const auto& ctype = std::use_facet<std::ctype<wchar_t>>(unicode_locale());
  std::size_t begin = 0, end = text.size();
  while (begin < end && ctype.is(std::ctype_base::space, text[begin])) ++begin;
  while (end > begin && ctype.is(std::ctype_base::space, text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

std::wstring basic_clean(const std::wstring& text) { return strip(html_unescape(html_unescape(fix_text(text)))); }

}  // namespace

std::string clean_caption_once(const std::string& raw) {
  // The patterns of language/t5.py, in its order (Python's \1 written $1).
  static const Pattern person(L"<person>");
  static const Pattern url_http(
      L"\\b((?:https?:(?:\\/{1,3}|[a-zA-Z0-9%])|[a-zA-Z0-9.\\-]+[.](?:com|co|ru|net|org|edu|gov|it)[\\w/-]*\\b\\/?(?!@)))");
  static const Pattern url_www(
      L"\\b((?:www:(?:\\/{1,3}|[a-zA-Z0-9%])|[a-zA-Z0-9.\\-]+[.](?:com|co|ru|net|org|edu|gov|it)[\\w/-]*\\b\\/?(?!@)))");
  static const Pattern handle(L"@[\\w\\d]+\\b");
  static const Pattern cjk[] = {Pattern(L"[\u31c0-\u31ef]+"), Pattern(L"[\u31f0-\u31ff]+"), Pattern(L"[\u3200-\u32ff]+"),
                                Pattern(L"[\u3300-\u33ff]+"), Pattern(L"[\u3400-\u4dbf]+"), Pattern(L"[\u4dc0-\u4dff]+"),
                                Pattern(L"[\u4e00-\u9fff]+")};
  static const Pattern dashes(
      L"[\u002D\u058A\u05BE\u1400\u1806\u2010-\u2015\u2E17\u2E1A\u2E3A\u2E3B\u2E40\u301C\u3030\u30A0\uFE31\uFE32\uFE58\uFE63\uFF0D]+");
  static const Pattern double_quotes(L"[`\u00b4\u00ab\u00bb\u201c\u201d\u00a8]");
  static const Pattern single_quotes(L"[\u2018\u2019]");
  static const Pattern quot(L"&quot;?");
  static const Pattern amp(L"&amp");
  static const Pattern ip(L"\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}");
  static const Pattern article(L"\\d:\\d\\d\\s+$");
  static const Pattern escaped_newline(L"\\\\n");
  static const Pattern hash_short(L"#\\d{1,3}\\b");
  static const Pattern hash_long(L"#\\d{5,}\\b");
  static const Pattern long_number(L"\\b\\d{6,}\\b");
  static const Pattern filename(L"[\\S]+\\.(?:png|jpg|jpeg|bmp|webp|eps|pdf|apk|mp4)");
  static const Pattern quote_runs(L"[\\\"\\']{2,}");
  static const Pattern dot_runs(L"[\\.]{2,}");
  static const Pattern bad_punct(L"[#\u00ae\u2022\u00a9\u2122&@\u00b7\u00ba\u00bd\u00be\u00bf\u00a1\u00a7~\\)\\(\\]\\[\\}\\{\\|\\\\\\/\\*]{1,}");
  static const Pattern lone_dot(L"\\s+\\.\\s+");
  static const Pattern joiners(L"(?:\\-|\\_)");
  static const Pattern code_short(L"\\b[a-zA-Z]{1,3}\\d{3,15}\\b");
  static const Pattern code_mixed(L"\\b[a-zA-Z]+\\d+[a-zA-Z]+\\b");
  static const Pattern code_numeric(L"\\b\\d+[a-zA-Z]+\\d+\\b");
  static const Pattern shipping(L"(worldwide\\s+)?(free\\s+)?shipping");
  static const Pattern download(L"(free\\s)?download(\\sfree)?");
  static const Pattern click(L"\\bclick\\b\\s(?:for|on)\\s\\w+");
  static const Pattern image_type(L"\\b(?:png|jpg|jpeg|bmp|webp|eps|pdf|apk|mp4)(\\simage[s]?)?");
  static const Pattern page(L"\\bpage\\s+\\d+\\b");
  static const Pattern code_long(L"\\b\\d*[a-zA-Z]+\\d+[a-zA-Z]+\\d+[a-zA-Z\\d]*\\b");
  static const Pattern dimensions(L"\\b\\d+\\.?\\d*[x\u0445\u00d7]\\d+\\.?\\d*\\b");
  static const Pattern colon(L"\\b\\s+\\:\\s+");
  static const Pattern punct_space(L"(\\D[,\\./])\\b");
  static const Pattern spaces(L"\\s+");
  static const Pattern quoted(L"^[\\\"\\']([\\w\\W]+)[\\\"\\']$");
  static const Pattern leading(L"^[\\'\\_,\\-\\:;]");
  static const Pattern trailing(L"[\\'\\_,\\-\\:\\-\\+]$");
  static const Pattern dotted_word(L"^\\.\\S+$");

  std::wstring c = lower(strip(utf8_to_wide(unquote_plus(raw))));
  c = sub(c, person, L"person");
  c = sub(c, url_http, L"");
  c = sub(c, url_www, L"");
  c = html_text(c);
  c = sub(c, handle, L"");
  for (const Pattern& block : cjk) c = sub(c, block, L"");
  c = sub(c, dashes, L"-");
  c = sub(c, double_quotes, L"\"");
  c = sub(c, single_quotes, L"'");
  c = sub(c, quot, L"");
  c = sub(c, amp, L"");
  c = sub(c, ip, L" ");
  c = sub(c, article, L"");
  c = sub(c, escaped_newline, L" ");
  c = sub(c, hash_short, L"");
  c = sub(c, hash_long, L"");
  c = sub(c, long_number, L"");
  c = sub(c, filename, L"");
  c = sub(c, quote_runs, L"\"");
  c = sub(c, dot_runs, L" ");
  c = sub(c, bad_punct, L" ");
  c = sub(c, lone_dot, L" ");
  const auto joiner_count = std::distance(std::wsregex_iterator(c.begin(), c.end(), joiners.regex), std::wsregex_iterator());
  if (joiner_count > 3) c = sub(c, joiners, L" ");
  c = basic_clean(c);
  c = sub(c, code_short, L"");
  c = sub(c, code_mixed, L"");
  c = sub(c, code_numeric, L"");
  c = sub(c, shipping, L"");
  c = sub(c, download, L"");
  c = sub(c, click, L"");
  c = sub(c, image_type, L"");
  c = sub(c, page, L"");
  c = sub(c, code_long, L" ");
  c = sub(c, dimensions, L"");
  c = sub(c, colon, L": ");
  c = sub(c, punct_space, L"$1 ");
  c = sub(c, spaces, L" ");
  c = sub(c, quoted, L"$1");
  c = sub(c, leading, L"");
  c = sub(c, trailing, L"");
  c = sub(c, dotted_word, L"");
  return wide_to_utf8(strip(c));
}

std::string llamagen_clean_caption(const std::string& caption) { return clean_caption_once(clean_caption_once(caption)); }

}  // namespace speculum
