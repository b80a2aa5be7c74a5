// A sweep's image grid (PNG), like an X/Y plot: one image per setting for the same prompt and seed, columns
// along the first parameter, rows along the second, labelled axes, and ar's image beside it as the reference.
// Qt (full builds only).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "speculum.h"

namespace speculum::cli {

struct SweepAxis {
  std::string name;
  std::vector<double> values;
};

// `images`: ar's first, then one per setting in row-major order (first axis fastest... as sweep orders them:
// the first axis outer, the second inner).
void write_sweep_grid(const std::string& method, const std::vector<SweepAxis>& axes, const std::vector<Image>& images,
                      const std::string& caption, const std::string& path);

}  // namespace speculum::cli
