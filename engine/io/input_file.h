// Opening files from outside: only regular files are read (a FIFO would block forever in open(), a device
// such as /dev/zero never ends), and only up to a size limit, checked before reading. Throws speculum::Error
// naming the file, what it is, and the limit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace speculum {

// "a folder", "a FIFO", "a device", "a symbolic link" or "not a regular file": how refusals name what is at a path.
const char* special_file_kind(const std::filesystem::file_status& status);

// The file's size; `what` names it in errors ("trace", "manifest", ...), `missing_hint` follows "no such file".
std::uint64_t check_input_file(const std::string& path, std::uint64_t max_bytes, const char* what, const char* missing_hint = "");

// Whether `name` (a file a manifest or an index names) is a plain file name: not empty, no path, no NUL.
bool is_plain_file_name(const std::string& name);

// The whole file, after check_input_file.
std::string read_input_file(const std::string& path, std::uint64_t max_bytes, const char* what, const char* missing_hint = "");

}  // namespace speculum
