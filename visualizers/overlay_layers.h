// The canvas's overlay layers as one list: names, legends, and painting by layer id. Each layer is a
// pure function from the grid state to an image (see token_state_layer.h, heat_map_layers.h).
#pragma once

#include <QColor>
#include <QImage>
#include <QString>
#include <vector>

#include "trace/grid_state.h"

namespace speculum::vis {

enum class Layer { TokenState, CommitStep, Acceptance, GridLines, Origin, SoftScore, PooledMass, Frontier, Rounds, Islands, LowRes, TargetP, Entropy };
inline constexpr Layer kAllLayers[] = {Layer::TokenState, Layer::CommitStep, Layer::Acceptance, Layer::GridLines,
                                       Layer::Origin,     Layer::SoftScore,  Layer::PooledMass, Layer::Frontier,
                                       Layer::Rounds,     Layer::Islands,    Layer::LowRes,     Layer::TargetP,
                                       Layer::Entropy};

QString layer_name(Layer layer);     // "Token state", ...
QString layer_key(Layer layer);      // stable id for settings: "token_state", ...

struct LegendEntry {
  QColor color;
  QString label;
};
// What a run has shown so far, so that a legend lists only the states that can appear in it.
struct RunContents {
  bool any_event = false;  // false: nothing loaded yet; legends list everything a run could show
  bool drafts = false, strict_accepts = false, soft_accepts = false, rejects = false, resamples = false;
  friend bool operator==(const RunContents&, const RunContents&) = default;
};
RunContents run_contents(const std::vector<Event>& events);
RunContents merged(const RunContents& a, const RunContents& b);  // what either shows

// `last_step` labels the commit-step scale; `seen` removes the states the run does not produce, and layers
// about drafts say "no drafts" when there are none.
std::vector<LegendEntry> layer_legend(Layer layer, int last_step, const RunContents& seen = {});

// Grid lines between cells on a transparent image of `size` pixels.
QImage paint_grid_lines(int rows, int cols, QSize size, QColor color);

// The layer at `size` pixels (cells are scaled with nearest-neighbour so each stays a solid block). LowRes is
// an inset of a picture the grid state does not hold: paint_frame draws it, and this returns a clear image.
QImage paint_layer(Layer layer, const GridState& grid, QSize size, int last_step);

}  // namespace speculum::vis
