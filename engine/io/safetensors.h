// safetensors reading (memory-mapped, every offset bounds-checked) and atomic writing.
// Format: u64 little-endian header length N, N bytes of JSON header, then the raw little-endian data.
// No LibTorch here, so `speculum-cli inspect` and any tool can read a file without a model.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace speculum {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };

std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // as in the file: "F32", "BF16", ...
std::optional<DType> dtype_from_name(const std::string& name);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // byte offsets into the data section
  std::uint64_t end = 0;

  std::int64_t numel() const;
  std::uint64_t nbytes() const { return end - begin; }
};

std::string shape_to_string(const std::vector<std::int64_t>& shape);  // "[3, 4]"

// A read-only, memory-mapped safetensors file. Opening validates the whole header: a malformed file
// is a speculum::Error naming the file and the first problem, never a crash.
class SafetensorsFile {
 public:
  // `what` names the file in refusals of what is at the path ("weights", "corpus", ...).
  static SafetensorsFile open(const std::string& path, const char* what = "weights");
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t file_size() const { return size_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // sorted by name
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const TensorInfo* find(const std::string& name) const;
  const std::uint8_t* data(const TensorInfo& tensor) const { return data_ + tensor.begin; }
  // Lets the kernel drop the mapped pages of a tensor that has been copied out. Touched pages of a mapping count as
  // the process's resident memory, so without this a load peaks at two copies of the weights. The bytes stay
  // readable (dropped pages are read from the file again).
  void drop_pages(const TensorInfo& tensor) const;

 private:
  SafetensorsFile() = default;
  void release();

  std::string path_;
  void* map_ = nullptr;
  std::uint64_t size_ = 0;
  const std::uint8_t* data_ = nullptr;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write: the bytes are borrowed, little-endian, `numel * dtype_size` long.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::uint64_t nbytes = 0;
};

// Writes to `<path>.partial`, then renames over `path`.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace speculum
