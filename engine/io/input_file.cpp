#include "io/input_file.h"

#include <filesystem>
#include <fstream>

#include "error.h"

namespace speculum {

const char* special_file_kind(const std::filesystem::file_status& status) {
  namespace fs = std::filesystem;
  if (fs::is_directory(status)) return "a folder";
  if (fs::is_symlink(status)) return "a symbolic link";
  if (fs::is_fifo(status)) return "a FIFO";
  if (fs::is_character_file(status) || fs::is_block_file(status)) return "a device";
  return "not a regular file";
}

std::uint64_t check_input_file(const std::string& path, std::uint64_t max_bytes, const char* what, const char* missing_hint) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);  // follows links: a link to a regular file is fine
  if (ec && ec != std::errc::no_such_file_or_directory)  // a link loop, a name too long, no permission to look
    throw Error(std::string("cannot read ") + what + " '" + path + "': " + ec.message());
  if (ec || !std::filesystem::exists(status))
    throw Error(std::string("cannot read ") + what + " '" + path + "': no such file" + missing_hint);
  if (!std::filesystem::is_regular_file(status))
    throw Error(std::string("refusing to read ") + what + " '" + path + "': it is " + special_file_kind(status));
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(std::string("cannot read ") + what + " '" + path + "': " + ec.message());
  if (size > max_bytes)
    throw Error(std::string(what) + " '" + path + "' is " + std::to_string(size) + " bytes; the limit is " +
                std::to_string(max_bytes));
  return size;
}

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}

std::string read_input_file(const std::string& path, std::uint64_t max_bytes, const char* what, const char* missing_hint) {
  const auto size = static_cast<std::size_t>(check_input_file(path, max_bytes, what, missing_hint));
  std::ifstream in(path, std::ios::binary);
  std::string bytes(size, '\0');
  if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(size)))
    throw Error(std::string("cannot read ") + what + " '" + path + "'");
  return bytes;
}

}  // namespace speculum
