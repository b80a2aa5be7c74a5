// What every fuzz target shares: the readers under test take files (as the product does), so each input is
// written to one scratch file per process first. A speculum::Error is the expected refusal; any other exception,
// a sanitizer report, a crash, a timeout or an allocation over libFuzzer's limit is a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace speculum::fuzz {

// A folder of this process's own under $TMPDIR (libFuzzer's -jobs run processes side by side).
inline const std::string& scratch_folder() {
  static const std::string folder = [] {
    const std::string path = (std::filesystem::temp_directory_path() / ("speculum-fuzz-" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(path);
    return path;
  }();
  return folder;
}

// Writes the input to scratch_folder()/name and returns the path.
inline std::string write_input(const std::uint8_t* data, std::size_t size, const std::string& name) {
  const std::string path = scratch_folder() + "/" + name;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) std::abort();
  std::fclose(file);
  return path;
}

}  // namespace speculum::fuzz
