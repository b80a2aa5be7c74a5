// `bench --kernels`: what a decode step's matrix products cost on this machine, by implementation and weight
// format, for the default model's and GPT-B's matrices (the study behind models/linear.h's choices).
#pragma once

#include <ostream>

namespace speculum::cli {

// On `threads` LibTorch threads (0: the current setting).
void print_kernel_study(std::ostream& out, int threads);

}  // namespace speculum::cli
