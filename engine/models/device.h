// The compute device a user names: "cpu", "cuda" or "auto" (CUDA when this LibTorch has a usable one).
#pragma once

#include <ATen/ATen.h>

#include <string>

namespace speculum {

// Throws speculum::Error naming the allowed values, or saying why CUDA is unavailable.
at::Device resolve_device(const std::string& name);

// The CPU's model name and logical cores: what a measurement on this machine is filed under.
std::string cpu_description();

}  // namespace speculum
