// Heat-map overlays over the token grid: which step committed each cell, and how often each cell's
// drafts were accepted. Colours follow the viridis ramp (perceptually uniform, colour-blind safe,
// readable on dark and light backgrounds). Pure functions of the grid state.
#pragma once

#include <QColor>
#include <QImage>

#include "trace/grid_state.h"

namespace speculum::vis {

// t in [0, 1] -> viridis colour (opaque); values outside are clamped.
QColor heat_color(double t);

// Committed cells coloured by commit step (first step dark purple, last step yellow); others clear.
// `last_step` fixes the scale (the run's final step), so the colours do not shift during a replay.
QImage paint_commit_step_layer(const GridState& grid, int cell_px, int last_step, int alpha = 170);

// Cells whose drafts were verified, coloured by accepted / verified; never-verified cells clear.
QImage paint_acceptance_layer(const GridState& grid, int cell_px, int alpha = 170);

// LISA: the latest soft-verification score of each cell where the soft rule was asked, mapped from
// [-1, 1] onto the ramp (0 = the acceptance bound); other cells clear.
QImage paint_soft_score_layer(const GridState& grid, int cell_px, int alpha = 170);

// SSD and every method that re-verifies: how many times each cell was verified, 1 to `most` (or more) on
// the ramp; never-verified cells clear. SSD's rounds-to-converge map.
QImage paint_rounds_layer(const GridState& grid, int cell_px, int most = 4, int alpha = 170);

// LANTERN: the share of the pooled probability p̃ that came from the draft's neighbours; cells never
// verified by LANTERN clear.
QImage paint_pooled_mass_layer(const GridState& grid, int cell_px, int alpha = 170);

// The target's probability of each cell's token on a log scale (p = 0.001 or less dark, p = 1 yellow): sharp
// distributions (flat backgrounds) read bright, flat ones (edges, textures) dark — where drafts tend to fail.
// Cells whose p is unknown are clear.
QImage paint_target_p_layer(const GridState& grid, int cell_px, int alpha = 170);
double target_p_position(double p);  // p -> [0, 1] on the layer's scale

// The entropy of the target distribution that judged each committed token, from 0 (dark: one token certain)
// to ln V (yellow: flat). Flat cells are where drafts get rejected and relaxed rules accept. Cells without
// a recorded entropy (not committed, or older traces) are clear.
QImage paint_entropy_layer(const GridState& grid, int cell_px, int alpha = 170);

}  // namespace speculum::vis
