#include "models/device.h"

#include <dlfcn.h>
#include <torch/version.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "error.h"
#include "models/linear_kernels.h"
#include "speculum.h"

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

namespace {

// The first line of /proc/cpuinfo's `model name` (empty where there is none).
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// The BLAS this process actually loaded (Debian picks it by alternatives at run time), from the memory map.
std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find("blas") != std::string::npos && path.find(".so") != std::string::npos) {
      std::error_code ignored;
      const auto real = std::filesystem::canonical(path, ignored);
      return real.empty() ? path : real.string();
    }
  }
  return "no BLAS library loaded yet";
}

// OpenBLAS's kernel set ("Haswell", "Cooperlake", ...), which it picks for the CPU when it loads unless
// OPENBLAS_CORETYPE names one: the same library file runs GEMM twice as fast with AVX-512 kernels as with AVX2 ones
// on an AVX-512 CPU. Empty when the BLAS loaded is not OpenBLAS.
std::string openblas_kernels() {
  using CoreName = const char* (*)();
  const auto core_name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* name = core_name ? core_name() : nullptr;
  return name ? name : "";
}

}  // namespace

std::string cpu_description() { return cpu_model() + " (" + std::to_string(std::thread::hardware_concurrency()) + " logical cores)"; }

std::string describe_runtime(const std::string& device) {
  std::ostringstream s;
  s << cpu_description() << ", LibTorch " << TORCH_VERSION << ", BLAS " << loaded_blas();
  if (const std::string kernels = openblas_kernels(); !kernels.empty()) s << " (" << kernels << " kernels)";
  s << ", decode-step kernels " << kernel_level_name(kernel_level()) << ", device " << device;
  return s.str();
}

}  // namespace speculum
