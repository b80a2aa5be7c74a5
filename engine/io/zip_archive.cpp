#include "io/zip_archive.h"

#include "io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "error.h"

namespace speculum {
namespace {

constexpr std::uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr std::uint32_t kZip64Locator = 0x07064b50;
constexpr std::uint32_t kZip64EndOfCentralDirectory = 0x06064b50;
constexpr std::uint32_t kCentralEntry = 0x02014b50;
constexpr std::uint32_t kLocalHeader = 0x04034b50;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::size_t kEocdSize = 22;
constexpr std::size_t kMaxComment = 0xFFFF;
constexpr std::uint64_t kMaxEntries = 1u << 20;
constexpr std::uint64_t kMaxCentralDirectory = 256u << 20;

std::uint64_t le(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A bounds-checked cursor over a byte buffer read from the archive.
class Cursor {
 public:
  Cursor(const std::vector<std::uint8_t>& bytes, std::size_t pos, const std::string& what)
      : bytes_(bytes), pos_(pos), what_(what) {}
  std::uint64_t take(int n) {
    need(static_cast<std::size_t>(n));
    const std::uint64_t v = le(bytes_.data() + pos_, n);
    pos_ += static_cast<std::size_t>(n);
    return v;
  }
  std::string take_string(std::size_t n) {
    need(n);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  void skip(std::size_t n) { need(n), pos_ += n; }
  std::size_t pos() const { return pos_; }

 private:
  void need(std::size_t n) const {
    if (n > bytes_.size() || pos_ > bytes_.size() - n) throw Error(what_ + " is cut short");
  }
  const std::vector<std::uint8_t>& bytes_;
  std::size_t pos_;
  std::string what_;
};

}  // namespace

ZipArchive ZipArchive::open(const std::string& path) {
  ZipArchive zip;
  zip.path_ = path;
  check_input_file(path, std::uint64_t{1} << 42, "checkpoint");  // a FIFO would block open() forever
  zip.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (zip.fd_ < 0) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(zip.fd_, &st) != 0 || !S_ISREG(st.st_mode)) throw Error("'" + path + "' is not a regular file");
  zip.size_ = static_cast<std::uint64_t>(st.st_size);
  const std::string where = "'" + path + "'";
  if (zip.size_ < kEocdSize) throw Error(where + " is too small to be a zip archive (" + std::to_string(zip.size_) + " bytes)");

  // The end-of-central-directory record sits in the last 22 + 65,535 bytes (its comment may follow it).
  const std::uint64_t tail_size = std::min<std::uint64_t>(zip.size_, kEocdSize + kMaxComment);
  std::vector<std::uint8_t> tail(tail_size);
  zip.read_at(zip.size_ - tail_size, tail.data(), tail_size);
  std::int64_t eocd = -1;
  for (std::int64_t i = static_cast<std::int64_t>(tail_size - kEocdSize); i >= 0; --i)
    if (le(&tail[static_cast<std::size_t>(i)], 4) == kEndOfCentralDirectory) {
      eocd = i;
      break;
    }
  if (eocd < 0) {
    std::uint8_t head[2] = {0, 0};
    zip.read_at(0, head, 2);
    if (head[0] == 0x80) throw Error(where + " is a legacy (pre-1.6, non-zip) torch.save file; re-save it with a current PyTorch");
    throw Error(where + " is not a zip archive (no end-of-central-directory record); torch.save writes zip files");
  }
  Cursor e(tail, static_cast<std::size_t>(eocd) + 4, where + ": end-of-central-directory record");
  const auto disk = e.take(2), cd_disk = e.take(2);
  e.take(2);
  std::uint64_t count = e.take(2), cd_size = e.take(4), cd_offset = e.take(4);
  if (disk != 0 || cd_disk != 0) throw Error(where + " is a multi-part zip archive (not supported)");
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    const std::uint64_t eocd_pos = zip.size_ - tail_size + static_cast<std::uint64_t>(eocd);
    if (eocd_pos < 20) throw Error(where + ": zip64 locator missing");
    std::vector<std::uint8_t> loc(20);
    zip.read_at(eocd_pos - 20, loc.data(), 20);
    Cursor l(loc, 0, where + ": zip64 locator");
    if (l.take(4) != kZip64Locator) throw Error(where + ": zip64 locator missing");
    l.take(4);
    const std::uint64_t z64 = l.take(8);
    if (z64 > zip.size_ || zip.size_ - z64 < 56) throw Error(where + ": zip64 end record lies outside the file");
    std::vector<std::uint8_t> rec(56);
    zip.read_at(z64, rec.data(), 56);
    Cursor z(rec, 0, where + ": zip64 end record");
    if (z.take(4) != kZip64EndOfCentralDirectory) throw Error(where + ": zip64 end record has a bad signature");
    z.skip(8 + 2 + 2 + 4 + 4 + 8);
    count = z.take(8);
    cd_size = z.take(8);
    cd_offset = z.take(8);
  }
  if (count > kMaxEntries) throw Error(where + " claims " + std::to_string(count) + " entries (at most 1,048,576 read)");
  if (cd_size > kMaxCentralDirectory || cd_offset > zip.size_ || cd_size > zip.size_ - cd_offset)
    throw Error(where + ": central directory (offset " + std::to_string(cd_offset) + ", " + std::to_string(cd_size) +
                " bytes) lies outside the file");

  std::vector<std::uint8_t> cd(cd_size);
  zip.read_at(cd_offset, cd.data(), cd_size);
  Cursor c(cd, 0, where + ": central directory");
  for (std::uint64_t i = 0; i < count; ++i) {
    if (c.take(4) != kCentralEntry) throw Error(where + ": central directory entry " + std::to_string(i) + " has a bad signature");
    c.skip(2 + 2);
    const auto flags = c.take(2), method = c.take(2);
    c.skip(2 + 2 + 4);
    std::uint64_t compressed = c.take(4), uncompressed = c.take(4);
    const auto name_len = c.take(2), extra_len = c.take(2), comment_len = c.take(2);
    c.skip(2 + 2 + 4);
    std::uint64_t local = c.take(4);
    ZipEntry entry;
    entry.name = c.take_string(name_len);
    const std::size_t extra_end = c.pos() + extra_len;
    while (c.pos() + 4 <= extra_end) {
      const auto id = c.take(2), len = c.take(2);
      if (c.pos() + len > extra_end) throw Error(where + ": entry '" + entry.name + "' has a malformed extra field");
      if (id == kZip64ExtraId) {
        Cursor x(cd, c.pos(), where + ": zip64 field of '" + entry.name + "'");
        if (uncompressed == 0xFFFFFFFF) uncompressed = x.take(8);
        if (compressed == 0xFFFFFFFF) compressed = x.take(8);
        if (local == 0xFFFFFFFF) local = x.take(8);
        if (x.pos() > c.pos() + len) throw Error(where + ": zip64 field of '" + entry.name + "' is cut short");
      }
      c.skip(len);
    }
    if (c.pos() != extra_end) c.skip(extra_end - c.pos());
    c.skip(comment_len);
    if (flags & 1) throw Error(where + ": entry '" + entry.name + "' is encrypted");
    if (method != 0 || compressed != uncompressed)
      throw Error(where + ": entry '" + entry.name + "' is compressed (method " + std::to_string(method) +
                  "); torch.save stores entries uncompressed");
    if (local > zip.size_ || zip.size_ - local < 30) throw Error(where + ": entry '" + entry.name + "' starts outside the file");
    std::vector<std::uint8_t> header(30);
    zip.read_at(local, header.data(), 30);
    Cursor h(header, 0, where + ": local header of '" + entry.name + "'");
    if (h.take(4) != kLocalHeader) throw Error(where + ": entry '" + entry.name + "' has a bad local header");
    h.skip(22);
    const std::uint64_t data = local + 30 + h.take(2) + h.take(2);
    if (data > zip.size_ || uncompressed > zip.size_ - data)
      throw Error(where + ": entry '" + entry.name + "' (" + std::to_string(uncompressed) + " bytes) runs past the end of the file");
    entry.data_offset = data;
    entry.size = uncompressed;
    zip.entries_.push_back(std::move(entry));
  }
  return zip;
}

ZipArchive::~ZipArchive() {
  if (fd_ >= 0) ::close(fd_);
}

ZipArchive::ZipArchive(ZipArchive&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_), entries_(std::move(other.entries_)) {}

ZipArchive& ZipArchive::operator=(ZipArchive&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    entries_ = std::move(other.entries_);
  }
  return *this;
}

const ZipEntry* ZipArchive::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

void ZipArchive::read(const ZipEntry& entry, std::uint64_t offset, void* out, std::uint64_t length) const {
  if (offset > entry.size || length > entry.size - offset)
    throw Error("'" + path_ + "': read of " + std::to_string(length) + " bytes at " + std::to_string(offset) +
                " runs past the end of entry '" + entry.name + "' (" + std::to_string(entry.size) + " bytes)");
  read_at(entry.data_offset + offset, out, length);
}

std::string ZipArchive::read_all(const ZipEntry& entry, std::uint64_t max_bytes) const {
  if (entry.size > max_bytes)
    throw Error("'" + path_ + "': entry '" + entry.name + "' is " + std::to_string(entry.size) + " bytes (at most " +
                std::to_string(max_bytes) + " read)");
  std::string bytes(entry.size, '\0');
  read(entry, 0, bytes.data(), entry.size);
  return bytes;
}

void ZipArchive::read_at(std::uint64_t offset, void* out, std::uint64_t length) const {
  auto* dst = static_cast<std::uint8_t*>(out);
  while (length > 0) {
    const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(length, 1u << 30));
    const ssize_t got = ::pread(fd_, dst, chunk, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw Error("'" + path_ + "': read failed at byte " + std::to_string(offset));
    dst += got;
    offset += static_cast<std::uint64_t>(got);
    length -= static_cast<std::uint64_t>(got);
  }
}

}  // namespace speculum
