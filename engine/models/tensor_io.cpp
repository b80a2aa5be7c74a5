#include "models/tensor_io.h"

#include "error.h"

namespace speculum {

at::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::F64: return at::kDouble;
    case DType::F32: return at::kFloat;
    case DType::F16: return at::kHalf;
    case DType::BF16: return at::kBFloat16;
    case DType::I64: return at::kLong;
    case DType::I32: return at::kInt;
    case DType::I16: return at::kShort;
    case DType::I8: return at::kChar;
    case DType::U8: return at::kByte;
    case DType::Bool: return at::kBool;
  }
  throw Error("unknown dtype");
}

namespace {

DType from_scalar_type(at::ScalarType type) {
  switch (type) {
    case at::kDouble: return DType::F64;
    case at::kFloat: return DType::F32;
    case at::kHalf: return DType::F16;
    case at::kBFloat16: return DType::BF16;
    case at::kLong: return DType::I64;
    case at::kInt: return DType::I32;
    case at::kShort: return DType::I16;
    case at::kChar: return DType::I8;
    case at::kByte: return DType::U8;
    case at::kBool: return DType::Bool;
    default: throw Error(std::string("cannot store tensors of type ") + at::toString(type) + " in safetensors");
  }
}

}  // namespace

TensorMap load_tensors(const SafetensorsFile& file, const std::vector<TensorSpec>& specs, at::Device device) {
  TensorMap out;
  for (const auto& spec : specs) {
    const TensorInfo* info = file.find(spec.name);
    if (!info) throw Error("'" + file.path() + "': missing tensor '" + spec.name + "'");
    // from_blob borrows the mapping; the conversion copies, so the map may be closed afterwards.
    const at::Tensor view = at::from_blob(const_cast<std::uint8_t*>(file.data(*info)), info->shape,
                                          at::TensorOptions().dtype(to_scalar_type(info->dtype)));
    at::Tensor weights = view.to(device, at::kFloat, /*non_blocking=*/false, /*copy=*/true).contiguous();
    file.drop_pages(*info);
    if (!at::isfinite(weights).all().item<bool>())  // silent garbage otherwise: NaN images, "no mass to sample"
      throw Error("'" + file.path() + "': tensor '" + spec.name + "' holds NaN or infinite values");
    out[spec.name] = std::move(weights);
  }
  return out;
}

void save_tensors(const std::string& path, const TensorMap& tensors, DType float_dtype,
                  const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> keep_alive;
  std::vector<TensorToWrite> entries;
  for (const auto& [name, tensor] : tensors) {
    at::Tensor t = tensor.detach().to(at::kCPU);
    if (t.is_floating_point()) t = t.to(to_scalar_type(float_dtype));
    t = t.contiguous();
    keep_alive.push_back(t);
    entries.push_back({name, from_scalar_type(t.scalar_type()), t.sizes().vec(), t.data_ptr(),
                       static_cast<std::uint64_t>(t.nbytes())});
  }
  write_safetensors(path, entries, metadata);
}

const at::Tensor& find_tensor(const TensorMap& tensors, const std::string& name, const char* owner) {
  const auto it = tensors.find(name);
  if (it == tensors.end()) throw Error(std::string(owner) + " weights lack tensor '" + name + "'");
  return it->second;
}

}  // namespace speculum
