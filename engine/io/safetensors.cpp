#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <bit>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "error.h"
#include "io/input_file.h"
#include "io/json_fields.h"

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace speculum {
namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100ull << 20;  // the reference implementation's limit
constexpr int kMaxJsonDepth = 8;                          // a valid header nests 3 deep

struct DTypeEntry {
  DType dtype;
  const char* name;
  std::size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
    {DType::I64, "I64", 8}, {DType::I32, "I32", 4}, {DType::I16, "I16", 2}, {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},   {DType::Bool, "BOOL", 1},
};

std::string allowed_dtypes() {
  std::string s;
  for (const auto& e : kDTypes) s += std::string(s.empty() ? "" : ", ") + e.name;
  return s;
}

std::uint64_t read_u64_le(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

TensorInfo parse_entry(const std::string& name, const nlohmann::json& j, std::uint64_t data_size) {
  const std::string where = "tensor '" + name + "'";
  if (!j.is_object()) throw Error(where + ": header entry is not an object");
  TensorInfo t;
  t.name = name;

  if (!j.contains("dtype") || !j["dtype"].is_string()) throw Error(where + ": missing string field 'dtype'");
  const auto dtype = dtype_from_name(j["dtype"].get<std::string>());
  if (!dtype)
    throw Error(where + ": unsupported dtype '" + j["dtype"].get<std::string>() + "' (allowed: " +
                allowed_dtypes() + ")");
  t.dtype = *dtype;

  if (!j.contains("shape") || !j["shape"].is_array()) throw Error(where + ": missing array field 'shape'");
  std::uint64_t numel = 1;
  for (const auto& d : j["shape"]) {
    if (!d.is_number_unsigned()) throw Error(where + ": shape entries must be non-negative integers");
    const std::uint64_t dim = d.get<std::uint64_t>();
    if (dim != 0 && numel > (std::uint64_t(1) << 62) / dim) throw Error(where + ": shape is absurdly large");
    numel *= dim;
    t.shape.push_back(static_cast<std::int64_t>(dim));
  }

  const auto& offsets = j.contains("data_offsets") ? j["data_offsets"] : nlohmann::json();
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    throw Error(where + ": 'data_offsets' must be [begin, end] with non-negative integers");
  t.begin = offsets[0].get<std::uint64_t>();
  t.end = offsets[1].get<std::uint64_t>();
  if (t.begin > t.end) throw Error(where + ": data_offsets begin > end");
  if (t.end > data_size)
    throw Error(where + ": data ends at byte " + std::to_string(t.end) + " but the data section has only " +
                std::to_string(data_size) + " bytes (file truncated?)");
  if (t.nbytes() != numel * dtype_size(t.dtype))
    throw Error(where + ": " + std::to_string(t.nbytes()) + " bytes of data for shape " +
                shape_to_string(t.shape) + " of " + dtype_name(t.dtype) + " (needs " +
                std::to_string(numel * dtype_size(t.dtype)) + ")");
  return t;
}

}  // namespace

std::size_t dtype_size(DType dtype) { return kDTypes[static_cast<int>(dtype)].size; }
const char* dtype_name(DType dtype) { return kDTypes[static_cast<int>(dtype)].name; }
std::optional<DType> dtype_from_name(const std::string& name) {
  for (const auto& e : kDTypes)
    if (name == e.name) return e.dtype;
  return std::nullopt;
}

std::int64_t TensorInfo::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string shape_to_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsFile SafetensorsFile::open(const std::string& path, const char* what) {
  SafetensorsFile f;
  f.path_ = path;
  check_input_file(path, std::numeric_limits<std::uint64_t>::max(), what);  // a FIFO would block in open()
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is not a regular file");
  }
  f.size_ = static_cast<std::uint64_t>(st.st_size);
  if (f.size_ < 8) {
    ::close(fd);
    throw Error("'" + path + "': " + std::to_string(f.size_) +
                " bytes is too short for a safetensors file (needs an 8-byte header length)");
  }
  f.map_ = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (f.map_ == MAP_FAILED) {
    f.map_ = nullptr;
    throw Error("cannot map '" + path + "': " + std::strerror(errno));
  }
  const auto* bytes = static_cast<const std::uint8_t*>(f.map_);

  try {
    const std::uint64_t header_len = read_u64_le(bytes);
    if (header_len > kMaxHeaderBytes)
      throw Error("header length " + std::to_string(header_len) + " exceeds the 100 MiB limit");
    if (header_len > f.size_ - 8)
      throw Error("header length " + std::to_string(header_len) + " runs past the end of the file (" +
                  std::to_string(f.size_) + " bytes)");
    const std::string text(reinterpret_cast<const char*>(bytes + 8), header_len);
    const nlohmann::json header = parse_untrusted_json(text, "header", kMaxJsonDepth);
    if (!header.is_object()) throw Error("header is not a JSON object");

    f.data_ = bytes + 8 + header_len;
    const std::uint64_t data_size = f.size_ - 8 - header_len;
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") {
        if (!value.is_object()) throw Error("'__metadata__' is not an object");
        for (const auto& [key, v] : value.items()) {
          if (!v.is_string()) throw Error("metadata '" + key + "' is not a string");
          f.metadata_[key] = v.get<std::string>();
        }
        continue;
      }
      f.tensors_.push_back(parse_entry(name, value, data_size));
    }

    std::vector<const TensorInfo*> by_offset;
    for (const auto& t : f.tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
    // Against the non-empty tensor reaching furthest so far, not merely the previous one: a zero-length tensor
    // between two others must not hide their overlap.
    const TensorInfo* furthest = nullptr;
    for (const TensorInfo* t : by_offset) {
      if (t->nbytes() == 0) continue;
      if (furthest && t->begin < furthest->end)
        throw Error("tensors '" + furthest->name + "' and '" + t->name + "' overlap");
      if (!furthest || t->end > furthest->end) furthest = t;
    }
    // The tensors tile the data section exactly (as the format requires): a gap or a tail means the header length
    // or an offset is wrong, and every tensor after it would be read shifted.
    std::uint64_t covered = 0;
    for (const TensorInfo* t : by_offset) {
      if (t->begin > covered)
        throw Error("data bytes [" + std::to_string(covered) + ", " + std::to_string(t->begin) +
                    ") belong to no tensor (before '" + t->name + "'): a wrong header length or data offset");
      covered = std::max(covered, t->end);
    }
    if (covered != data_size)
      throw Error("the data section holds " + std::to_string(data_size) + " bytes but the tensors cover " + std::to_string(covered) +
                  ": a wrong header length or data offset");
    std::sort(f.tensors_.begin(), f.tensors_.end(), [](auto& a, auto& b) { return a.name < b.name; });
  } catch (const Error& e) {
    throw Error("'" + path + "': " + e.what());
  }
  return f;
}

SafetensorsFile::~SafetensorsFile() { release(); }

void SafetensorsFile::drop_pages(const TensorInfo& tensor) const {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = (reinterpret_cast<std::uintptr_t>(data(tensor)) + page - 1) / page * page;  // whole pages inside
  const auto last = (reinterpret_cast<std::uintptr_t>(data(tensor)) + tensor.nbytes()) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void SafetensorsFile::release() {
  if (map_) ::munmap(map_, size_);
  map_ = nullptr;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept { *this = std::move(o); }

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    map_ = std::exchange(o.map_, nullptr);
    size_ = o.size_;
    data_ = o.data_;
    tensors_ = std::move(o.tensors_);
    metadata_ = std::move(o.metadata_);
  }
  return *this;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorInfo& t, const std::string& n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    std::uint64_t numel = 1;
    for (auto d : t.shape) numel *= static_cast<std::uint64_t>(d);
    if (numel * dtype_size(t.dtype) != t.nbytes)
      throw Error("tensor '" + t.name + "': " + std::to_string(t.nbytes) + " bytes do not match shape " +
                  shape_to_string(t.shape) + " of " + dtype_name(t.dtype));
    if (header.contains(t.name)) throw Error("tensor '" + t.name + "' is written twice");
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.nbytes}}};
    offset += t.nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned

  const std::string partial = path + ".partial";
  std::FILE* out = std::fopen(partial.c_str(), "wb");
  if (!out) throw Error("cannot write '" + partial + "': " + std::strerror(errno));
  const std::uint64_t header_len = text.size();
  bool ok = std::fwrite(&header_len, 8, 1, out) == 1 && std::fwrite(text.data(), 1, text.size(), out) == text.size();
  for (const auto& t : tensors)
    ok = ok && (t.nbytes == 0 || std::fwrite(t.data, 1, t.nbytes, out) == t.nbytes);
  ok = std::fclose(out) == 0 && ok;
  if (!ok || std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    throw Error("writing '" + path + "' failed: " + std::strerror(errno));
  }
}

}  // namespace speculum
