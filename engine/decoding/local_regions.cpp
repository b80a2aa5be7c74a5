#include "decoding/local_regions.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

namespace speculum {
namespace {

bool raster_less(const Cell& a, const Cell& b) { return std::pair{a.row, a.col} < std::pair{b.row, b.col}; }

}  // namespace

std::vector<Cell> expand_region(const std::vector<Cell>& seeds, int radius, int cols, int begin, int end) {
  std::set<int> rasters;
  for (const Cell& seed : seeds)
    for (int row = seed.row - radius; row <= seed.row + radius; ++row)
      for (int col = std::max(0, seed.col - radius); col <= std::min(cols - 1, seed.col + radius); ++col)
        if (const int raster = row * cols + col; row >= 0 && raster >= begin && raster < end) rasters.insert(raster);
  std::vector<Cell> cells;
  for (const int raster : rasters) cells.push_back({raster / cols, raster % cols});
  return cells;
}

std::vector<std::vector<Cell>> islands_8connected(const std::vector<Cell>& cells) {
  std::vector<Cell> sorted = cells;
  std::sort(sorted.begin(), sorted.end(), raster_less);
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::map<std::pair<int, int>, int> island_of;  // cell -> island id, -1 while unvisited
  for (const Cell& c : sorted) island_of[{c.row, c.col}] = -1;
  std::vector<std::vector<Cell>> islands;
  for (const Cell& start : sorted) {
    if (island_of[{start.row, start.col}] >= 0) continue;
    const int id = static_cast<int>(islands.size());
    islands.emplace_back();
    std::vector<Cell> stack = {start};
    island_of[{start.row, start.col}] = id;
    while (!stack.empty()) {
      const Cell c = stack.back();
      stack.pop_back();
      islands[id].push_back(c);
      for (int dr = -1; dr <= 1; ++dr)
        for (int dc = -1; dc <= 1; ++dc) {
          const auto it = island_of.find({c.row + dr, c.col + dc});
          if (it == island_of.end() || it->second >= 0) continue;
          it->second = id;
          stack.push_back({c.row + dr, c.col + dc});
        }
    }
    std::sort(islands[id].begin(), islands[id].end(), raster_less);
  }
  return islands;
}

}  // namespace speculum
