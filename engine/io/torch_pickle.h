// A pickle reader for PyTorch state dicts that evaluates data only. It knows the opcodes `torch.save`
// emits for nested dicts, lists, tuples, numbers, strings and tensors (protocols 2 to 5), and a short
// allow-list of globals: `collections.OrderedDict`, the tensor and parameter rebuild functions, and the
// storage types. Nothing is ever imported or called: an allowed global maps to a fixed C++ action, a few
// data-only classes that training scripts save beside the weights (argparse.Namespace, numpy scalars)
// become inert placeholders, and any other global or opcode is a speculum::Error naming it. Sizes, stack,
// memo and nesting are bounded, so a hostile or damaged pickle ends in an error, never a crash or a hang.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/safetensors.h"

namespace speculum {

// A storage named by a persistent id: ('storage', torch.<Type>Storage, key, location, numel).
struct PickledStorage {
  std::string key;  // the record `data/<key>` in the archive
  DType dtype = DType::F32;
  std::uint64_t numel = 0;
};

// A tensor rebuilt by torch._utils._rebuild_tensor_v2: a strided view of a storage (extent checked).
struct PickledTensor {
  PickledStorage storage;
  std::int64_t offset = 0;  // in elements
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> stride;
  std::int64_t numel() const;
};

struct PickleValue;
using PickleRef = std::shared_ptr<PickleValue>;

struct PickleValue {
  enum class Kind { None, Bool, Int, Float, String, Bytes, Tuple, List, Dict, Global, Storage, Tensor, Opaque };
  Kind kind = Kind::None;
  std::int64_t integer = 0;
  double real = 0;
  std::string text;  // String and Bytes: the value; Global: "module.name"; Opaque: what it stands for
  std::vector<PickleRef> items;                          // Tuple, List
  std::vector<std::pair<PickleRef, PickleRef>> entries;  // Dict, in insertion order
  PickledStorage storage;
  PickledTensor tensor;
};

const char* kind_name(PickleValue::Kind kind);

// Evaluates `bytes` (the `data.pkl` of a torch.save archive); `where` names it in errors.
PickleRef unpickle_state(std::string_view bytes, const std::string& where);

}  // namespace speculum
