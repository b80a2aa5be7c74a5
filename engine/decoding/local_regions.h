// MuLo-SD's local rejection geometry (research/seed-methods.md §4.3 steps 4–5): rejected cells grow to
// their (2l+1)² neighbourhood inside the current draft block, and the grown region splits into
// 8-connected islands that are resampled side by side. Pure functions on cells, no tensors.
#pragma once

#include <vector>

#include "trace/events.h"

namespace speculum {

// R_X: every cell within Chebyshev distance `radius` of a seed whose raster index (row · cols + col) lies
// in [begin, end) — the block; cells before it are committed and never reopened. Raster order, no repeats.
std::vector<Cell> expand_region(const std::vector<Cell>& seeds, int radius, int cols, int begin, int end);

// The 8-connected components of `cells`: each island in raster order, islands ordered by their first cell.
std::vector<std::vector<Cell>> islands_8connected(const std::vector<Cell>& cells);

}  // namespace speculum
