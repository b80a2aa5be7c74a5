#include "models/device.h"

#include "error.h"

namespace speculum {

at::Device resolve_device(const std::string& name) {
  if (name == "cpu") return at::kCPU;
  if (name == "cuda" || name == "auto") {
    if (at::hasCUDA()) return at::Device(at::kCUDA, 0);
    if (name == "auto") return at::kCPU;
    throw Error("device 'cuda' requested, but this LibTorch has no usable CUDA device (build with a CUDA LibTorch via Torch_DIR)");
  }
  throw Error("unknown device '" + name + "' (allowed: auto, cpu, cuda)");
}

}  // namespace speculum
