// The tensors of a PyTorch checkpoint written by `torch.save` (zip container, pickled state dict),
// read without Python and without executing anything (io/torch_pickle.h). The state dict may be the
// top level or sit under "model", "module", "state_dict" or "ema"; keys lose any `module.` (DataParallel)
// and `_orig_mod.` (torch.compile) prefixes. Tensor bytes are read on demand, one tensor at a time, so a
// multi-gigabyte checkpoint never has to fit in memory twice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/torch_pickle.h"
#include "io/zip_archive.h"

namespace speculum {

struct CheckpointTensor {
  std::string name;  // prefixes stripped
  PickledTensor view;
  DType dtype() const { return view.storage.dtype; }
  const std::vector<std::int64_t>& shape() const { return view.shape; }
  std::uint64_t nbytes() const { return static_cast<std::uint64_t>(view.numel()) * dtype_size(dtype()); }
};

class TorchCheckpoint {
 public:
  // `state_key` picks the sub-dictionary ("model", "ema", ...); empty: the first of model, module,
  // state_dict, ema that exists, else the top level.
  static TorchCheckpoint open(const std::string& path, const std::string& state_key = "");

  const std::string& path() const { return zip_.path(); }
  const std::vector<CheckpointTensor>& tensors() const { return tensors_; }
  const CheckpointTensor* find(const std::string& name) const;
  // What was done to reach the tensors: which key held them, prefixes stripped, entries skipped.
  const std::vector<std::string>& notes() const { return notes_; }
  // The tensor's elements, contiguous and little-endian (`nbytes()` bytes).
  std::vector<std::uint8_t> read(const CheckpointTensor& tensor) const;

 private:
  explicit TorchCheckpoint(ZipArchive zip) : zip_(std::move(zip)) {}
  ZipArchive zip_;
  std::string prefix_;  // the archive's top folder, e.g. "archive/"
  std::vector<CheckpointTensor> tensors_;
  std::vector<std::string> notes_;
};

}  // namespace speculum
