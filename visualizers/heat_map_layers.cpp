#include "heat_map_layers.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "cell_painter.h"

namespace speculum::vis {

QColor heat_color(double t) {
  // Nine samples of matplotlib's viridis, linearly interpolated.
  static constexpr std::array<std::array<int, 3>, 9> kViridis = {{{68, 1, 84},
                                                                  {71, 44, 122},
                                                                  {59, 81, 139},
                                                                  {44, 113, 142},
                                                                  {33, 144, 141},
                                                                  {39, 173, 129},
                                                                  {92, 200, 99},
                                                                  {170, 220, 50},
                                                                  {253, 231, 37}}};
  const double x = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * (kViridis.size() - 1);
  const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(x), kViridis.size() - 2);
  const double f = x - i;
  auto mix = [&](int k) { return static_cast<int>(std::lround(kViridis[i][k] * (1 - f) + kViridis[i + 1][k] * f)); };
  return QColor(mix(0), mix(1), mix(2));
}

QImage paint_commit_step_layer(const GridState& grid, int cell_px, int last_step, int alpha) {
  return paint_cells(grid, cell_px, [&](const CellInfo& cell) {
    if (cell.state != CellState::Committed || cell.commit_step < 0) return QColor(0, 0, 0, 0);
    QColor color = heat_color(last_step > 0 ? double(cell.commit_step) / last_step : 0.0);
    color.setAlpha(alpha);
    return color;
  });
}

QImage paint_acceptance_layer(const GridState& grid, int cell_px, int alpha) {
  return paint_cells(grid, cell_px, [&](const CellInfo& cell) {
    if (cell.times_verified == 0) return QColor(0, 0, 0, 0);
    QColor color = heat_color(double(cell.times_accepted) / cell.times_verified);
    color.setAlpha(alpha);
    return color;
  });
}

QImage paint_soft_score_layer(const GridState& grid, int cell_px, int alpha) {
  return paint_cells(grid, cell_px, [&](const CellInfo& cell) {
    if (cell.soft_score < -1e8f) return QColor(0, 0, 0, 0);
    QColor color = heat_color(0.5 + 0.5 * std::clamp(static_cast<double>(cell.soft_score), -1.0, 1.0));
    color.setAlpha(alpha);
    return color;
  });
}

QImage paint_rounds_layer(const GridState& grid, int cell_px, int most, int alpha) {
  return paint_cells(grid, cell_px, [&](const CellInfo& cell) {
    if (cell.times_verified == 0) return QColor(0, 0, 0, 0);
    QColor color = heat_color(most > 1 ? double(std::min(cell.times_verified, most) - 1) / (most - 1) : 1.0);
    color.setAlpha(alpha);
    return color;
  });
}

QImage paint_pooled_mass_layer(const GridState& grid, int cell_px, int alpha) {
  return paint_cells(grid, cell_px, [&](const CellInfo& cell) {
    if (cell.pooled_gain < 0) return QColor(0, 0, 0, 0);
    QColor color = heat_color(cell.pooled_gain);
    color.setAlpha(alpha);
    return color;
  });
}

double target_p_position(double p) { return std::clamp(1 + std::log10(std::max(p, 1e-12)) / 3, 0.0, 1.0); }

QImage paint_target_p_layer(const GridState& grid, int cell_px, int alpha) {
  return paint_cells(grid, cell_px, [&](const CellInfo& cell) {
    if (cell.p < 0) return QColor(0, 0, 0, 0);
    QColor color = heat_color(target_p_position(cell.p));
    color.setAlpha(alpha);
    return color;
  });
}

QImage paint_entropy_layer(const GridState& grid, int cell_px, int alpha) {
  const double flat = grid.vocab_size() > 1 ? std::log(static_cast<double>(grid.vocab_size())) : 1.0;
  return paint_cells(grid, cell_px, [&](const CellInfo& cell) {
    if (cell.entropy < 0) return QColor(0, 0, 0, 0);
    QColor color = heat_color(cell.entropy / flat);
    color.setAlpha(alpha);
    return color;
  });
}

}  // namespace speculum::vis
