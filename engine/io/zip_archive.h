// Read-only access to the uncompressed ("stored") entries of a zip archive, as `torch.save` writes them
// (PKWARE APPNOTE: end of central directory, zip64 extensions, central directory, local headers).
// Every offset and size is checked against the file before use; a malformed archive is a speculum::Error
// naming the file and the problem. No LibTorch, no decompression: a compressed entry is refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace speculum {

struct ZipEntry {
  std::string name;
  std::uint64_t data_offset = 0;  // where the entry's bytes start in the file
  std::uint64_t size = 0;
};

class ZipArchive {
 public:
  static ZipArchive open(const std::string& path);
  ~ZipArchive();
  ZipArchive(ZipArchive&& other) noexcept;
  ZipArchive& operator=(ZipArchive&& other) noexcept;
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t file_size() const { return size_; }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;
  // Reads `length` bytes of `entry` from `offset` within it (bounds checked against the entry).
  void read(const ZipEntry& entry, std::uint64_t offset, void* out, std::uint64_t length) const;
  std::string read_all(const ZipEntry& entry, std::uint64_t max_bytes) const;

 private:
  ZipArchive() = default;
  void read_at(std::uint64_t offset, void* out, std::uint64_t length) const;

  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::vector<ZipEntry> entries_;
};

}  // namespace speculum
