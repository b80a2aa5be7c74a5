#include "io/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "error.h"
#include "io/input_file.h"

namespace speculum {

void check_replaceable(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (ec || !std::filesystem::exists(status) || std::filesystem::is_regular_file(status)) return;
  throw Error("refusing to write '" + path + "': it is " + special_file_kind(status) + "; outputs replace only regular files");
}

void replace_with(const std::string& partial, const std::string& path) {
  try {
    check_replaceable(path);
  } catch (const Error&) {
    std::remove(partial.c_str());
    throw;
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(partial.c_str());
    throw Error("cannot move '" + partial + "' to '" + path + "': " + reason);
  }
}

void write_text_atomically(const std::string& path, const std::string& text) {
  check_replaceable(path);
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::remove(partial.c_str());
      throw Error("cannot write '" + partial + "': " + std::strerror(errno));
    }
  }
  replace_with(partial, path);
}

}  // namespace speculum
