// UTF-8 to and from code points (wchar_t holds one on the platforms Speculum builds for). Torch-free.
#pragma once

#include <string>

namespace speculum {

// Invalid or truncated sequences and overlong forms read as U+FFFD, as Python's errors="replace" does.
std::wstring utf8_to_wide(const std::string& text);
std::string wide_to_utf8(const std::wstring& text);

}  // namespace speculum
