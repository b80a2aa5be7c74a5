#include "error.h"

#include <cctype>
#include <filesystem>

namespace speculum {

std::string user_message(const std::exception& e) {
  if (const auto* fs = dynamic_cast<const std::filesystem::filesystem_error*>(&e)) {
    std::string reason = fs->code().message();
    if (!reason.empty()) reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
    std::string paths = "'" + fs->path1().string() + "'";
    if (!fs->path2().empty()) paths += " and '" + fs->path2().string() + "'";
    return (fs->path1().empty() ? std::string("a file") : paths) + ": " + reason;
  }
  std::string what = e.what();
  what = what.substr(0, what.find('\n'));
  // nlohmann-json's "[json.exception.type_error.302] type must be number": the tag means nothing to a reader.
  if (const auto tag_end = what.find("] "); what.starts_with("[json.exception.") && tag_end != std::string::npos)
    what.erase(0, tag_end + 2);
  return what;
}

}  // namespace speculum
