// bench --kernels: what a decode step's matrix products cost on this machine, by implementation and weight format, for
// the default model's and GPT-B's matrices (the study behind models/linear.h's choices).
#include "speculum_tools.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <vector>

#include "models/linear.h"

namespace speculum {
namespace {

template <class F>
double median_us(F&& run, int repeats) {
  for (int i = 0; i < 3; ++i) run();
  std::vector<double> us;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(us.begin(), us.begin() + static_cast<std::ptrdiff_t>(us.size() / 2), us.end());
  return us[us.size() / 2];
}

// A large model's decode step reads every matrix from memory, not from the cache the table above reuses: here each
// product takes the next of enough copies of GPT-B's w1 to fill kPoolBytes, and the rate is that of the weights' bytes.
void print_streaming_from_memory(std::ostream& out) {
  constexpr std::int64_t kPoolBytes = std::int64_t{512} << 20;
  const at::Tensor w = at::randn({2048, 768}) * 0.05;
  const std::int64_t copies = kPoolBytes / (w.numel() * 4);
  out << "\nGPT-B w1 (2048x768) from memory: each product reads the next of " << copies
      << " copies (f32 " << (kPoolBytes >> 20) << " MB); median microseconds and weight GB/s\n"
      << std::setw(6) << "rows";
  const WeightFormat formats[] = {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16, WeightFormat::Q8};
  for (const WeightFormat f : formats) out << std::setw(10) << weight_format_name(f) << std::setw(8) << "GB/s";
  out << "\n";
  std::vector<std::vector<double>> us(5);
  for (const WeightFormat f : formats) {
    std::vector<LinearWeight> pool;
    for (std::int64_t c = 0; c < copies; ++c) pool.push_back(make_linear_weight(w + 0.0, f));
    int rows_index = 0;
    for (const int rows : {1, 2, 4, 8, 16}) {
      const at::Tensor x = at::randn({rows, 768});
      std::size_t next = 0;
      us[rows_index++].push_back(median_us([&] { linear_streamed(x, pool[next++ % pool.size()]); }, 2 * static_cast<int>(copies)));
    }
  }
  int rows_index = 0;
  for (const int rows : {1, 2, 4, 8, 16}) {
    out << std::setw(6) << rows << std::fixed;
    for (std::size_t f = 0; f < std::size(formats); ++f) {
      const double bytes = static_cast<double>(make_linear_weight(w, formats[f]).bytes());
      out << std::setprecision(1) << std::setw(10) << us[rows_index][f] << std::setw(8) << bytes / us[rows_index][f] / 1e3;
    }
    out << "\n";
    ++rows_index;
  }
}

}  // namespace

void print_kernel_study(std::ostream& out, int threads) {
  if (threads > 0) at::set_num_threads(threads);
  threads = at::get_num_threads();
  c10::InferenceMode inference;
  at::manual_seed(0);
  struct Shape {
    const char* what;
    int out, in;
  };
  const Shape shapes[] = {{"default wqkv", 576, 192}, {"default w1/w3", 512, 192}, {"default w2", 192, 512},
                          {"default output", 1024, 192}, {"GPT-B wqkv", 2304, 768}, {"GPT-B w1/w3", 2048, 768},
                          {"GPT-B w2", 768, 2048}, {"GPT-B output", 16384, 768}};
  out << "y = x W^T for x of `rows` rows, median microseconds (" << threads << " threads; streaming kernels "
      << kernel_level_name(kernel_level()) << "; f32..q8 stream whatever the rows; linear() switches to\n"
      << "GEMM above " << kStreamRowsMax << " rows)\n"
      << std::left << std::setw(16) << "matrix" << std::right << std::setw(12) << "out x in" << std::setw(6) << "rows"
      << std::setw(10) << "GEMM" << std::setw(10) << "mv/row" << std::setw(10) << "f32" << std::setw(10) << "f16"
      << std::setw(10) << "bf16" << std::setw(10) << "q8" << std::setw(12) << "f32 GB/s" << std::setw(12) << "GEMM/f32\n";
  for (const Shape& s : shapes)
    for (const int rows : {1, 2, 4, 8, 16, 32, 64}) {
      const at::Tensor w = at::randn({s.out, s.in}) * 0.05, x = at::randn({rows, s.in});
      const int repeats = static_cast<std::int64_t>(s.out) * s.in > 1000000 ? 20 : 100;
      const double gemm = median_us([&] { at::linear(x, w); }, repeats);
      const double mv = median_us([&] { for (int r = 0; r < rows; ++r) at::mv(w, x[r]); }, repeats);
      std::vector<double> formats;
      for (const WeightFormat f : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16, WeightFormat::Q8}) {
        const LinearWeight lw = make_linear_weight(w, f);
        formats.push_back(median_us([&] { linear_streamed(x, lw); }, repeats));
      }
      out << std::left << std::setw(16) << s.what << std::right << std::setw(12)
          << (std::to_string(s.out) + "x" + std::to_string(s.in)) << std::setw(6) << rows << std::fixed << std::setprecision(1)
          << std::setw(10) << gemm << std::setw(10) << mv;
      for (const double us : formats) out << std::setw(10) << us;
      out << std::setw(12) << 4.0 * s.out * s.in / formats[0] / 1e3 << std::setprecision(2) << std::setw(11)
          << gemm / formats[0] << "x\n";
    }
  print_streaming_from_memory(out);
}

}  // namespace speculum
