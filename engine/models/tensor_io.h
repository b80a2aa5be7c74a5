// Moves named tensors between safetensors files and LibTorch.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "models/model_config.h"

namespace speculum {

using TensorMap = std::map<std::string, at::Tensor>;

// Loads the tensors named by `specs` as float32 on `device` (shapes checked by check_weights first).
TensorMap load_tensors(const SafetensorsFile& file, const std::vector<TensorSpec>& specs, at::Device device);

// Writes every tensor of `tensors` (floating ones stored as `float_dtype`: F32, F16 or BF16).
void save_tensors(const std::string& path, const TensorMap& tensors, DType float_dtype = DType::F32,
                  const std::map<std::string, std::string>& metadata = {});

at::ScalarType to_scalar_type(DType dtype);

// The tensor `name` of `tensors`; throws naming it and `owner` ("target", "tokenizer") when absent.
const at::Tensor& find_tensor(const TensorMap& tensors, const std::string& name, const char* owner);

}  // namespace speculum
