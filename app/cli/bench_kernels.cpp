#include "cli/bench_kernels.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <vector>

#include "models/linear.h"

namespace speculum::cli {
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
      << (stream_linear_vectorised() ? "AVX2" : "portable") << "; f32..q8 stream whatever the rows; linear() switches to\n"
      << "GEMM above " << stream_rows_max(WeightFormat::F32) << " rows for f32, " << stream_rows_max(WeightFormat::F16)
      << " for f16 and bf16, " << stream_rows_max(WeightFormat::Q8) << " for q8)\n"
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
}

}  // namespace speculum::cli
