#include "overlay_layers.h"

#include <QPainter>

#include "frontier_layer.h"
#include "heat_map_layers.h"
#include "islands_layer.h"
#include "token_state_layer.h"

namespace speculum::vis {

QString layer_name(Layer layer) {
  switch (layer) {
    case Layer::TokenState: return "Token state";
    case Layer::CommitStep: return "Commit step";
    case Layer::Acceptance: return "Acceptance rate";
    case Layer::GridLines: return "Grid lines";
    case Layer::Origin: return "How each token was decided";
    case Layer::SoftScore: return "Soft-verification score (LISA)";
    case Layer::PooledMass: return "Pooled mass (LANTERN)";
    case Layer::TargetP: return "p of token (target)";
    case Layer::Entropy: return "Entropy of the target's distribution";
    case Layer::Frontier: return "Drafting frontier (SSD)";
    case Layer::Rounds: return "Times verified (SSD rounds)";
    case Layer::Islands: return "Local resampling islands (MuLo-SD)";
    case Layer::LowRes: return "Low-resolution draft (MuLo-SD)";
  }
  return {};
}

QString layer_key(Layer layer) {
  switch (layer) {
    case Layer::TokenState: return "token_state";
    case Layer::CommitStep: return "commit_step";
    case Layer::Acceptance: return "acceptance";
    case Layer::GridLines: return "grid_lines";
    case Layer::Origin: return "origin";
    case Layer::SoftScore: return "soft_score";
    case Layer::PooledMass: return "pooled_mass";
    case Layer::TargetP: return "p_of_token";
    case Layer::Entropy: return "entropy";
    case Layer::Frontier: return "frontier";
    case Layer::Rounds: return "rounds";
    case Layer::Islands: return "islands";
    case Layer::LowRes: return "low_res";
  }
  return {};
}

RunContents run_contents(const std::vector<Event>& events) {
  RunContents seen;
  seen.any_event = !events.empty();
  for (const Event& event : events) {
    if (std::holds_alternative<Draft>(event)) seen.drafts = true;
    if (std::holds_alternative<Resample>(event)) seen.resamples = true;
    if (const auto* verify = std::get_if<Verify>(&event))
      for (Decision d : verify->decisions) {
        seen.strict_accepts |= d == Decision::StrictAccept;
        seen.soft_accepts |= d == Decision::SoftAccept;
        seen.rejects |= d == Decision::Reject;
      }
  }
  return seen;
}

RunContents merged(const RunContents& a, const RunContents& b) {
  return {a.any_event || b.any_event, a.drafts || b.drafts, a.strict_accepts || b.strict_accepts, a.soft_accepts || b.soft_accepts,
          a.rejects || b.rejects, a.resamples || b.resamples};
}

std::vector<LegendEntry> layer_legend(Layer layer, int last_step, const RunContents& seen) {
  // Before any run everything is possible; after one, only what it produced.
  const auto shows = [&seen](bool produced) { return !seen.any_event || produced; };
  const bool no_drafts = seen.any_event && !seen.drafts;
  const LegendEntry none{QColor(128, 128, 128), "no drafts in this run"};
  switch (layer) {
    case Layer::TokenState: {
      std::vector<LegendEntry> entries;
      for (const auto& [s, produced] : {std::pair{CellState::Drafted, seen.drafts}, std::pair{CellState::Accepted, seen.strict_accepts},
                                        std::pair{CellState::SoftAccepted, seen.soft_accepts}, std::pair{CellState::Rejected, seen.rejects},
                                        std::pair{CellState::Resampled, seen.resamples}})
        if (shows(produced)) entries.push_back({state_color(s), state_label(s)});
      entries.push_back({QColor(20, 20, 20), "not committed (dimmed)"});
      return entries;
    }
    case Layer::CommitStep:
      return {{heat_color(0), "committed at step 1"},
              {heat_color(0.5), QString("step %1").arg(last_step / 2 + 1)},
              {heat_color(1), QString("step %1").arg(last_step + 1)}};
    case Layer::Acceptance:
      if (no_drafts) return {none};
      return {{heat_color(0), "0 % of drafts accepted"}, {heat_color(0.5), "50 %"}, {heat_color(1), "100 %"}};
    case Layer::GridLines: return {};
    case Layer::Origin: {
      std::vector<LegendEntry> entries;
      for (const auto& [o, produced] : {std::pair{CellOrigin::StrictAccept, seen.strict_accepts}, std::pair{CellOrigin::SoftAccept, seen.soft_accepts},
                                        std::pair{CellOrigin::Residual, seen.resamples}, std::pair{CellOrigin::Target, true}})
        if (shows(produced)) entries.push_back({origin_color(o), origin_label(o)});
      return entries;
    }
    case Layer::SoftScore:
      if (seen.any_event && !seen.soft_accepts && !seen.rejects) return {none};
      return {{heat_color(0), "soft score -1 (far outside)"}, {heat_color(0.5), "0 (the bound)"}, {heat_color(1), "1 (at the mode)"}};
    case Layer::PooledMass:
      if (no_drafts) return {none};
      return {{heat_color(0), "pooling added nothing"}, {heat_color(0.5), "half the pooled probability from neighbours"},
              {heat_color(1), "all of it from neighbours"}};
    case Layer::TargetP:
      return {{heat_color(0), "p ≤ 0.001 (a flat distribution)"}, {heat_color(target_p_position(0.03)), "p = 0.03"},
              {heat_color(1), "p = 1 (sharp)"}};
    case Layer::Entropy:
      return {{heat_color(0), "0 nats: the target is sure (sharp)"},
              {heat_color(0.5), "half of ln V: a few dozen likely tokens"},
              {heat_color(1), "ln V: every token equally likely (flat)"}};
    case Layer::Frontier:
      return {{kFrontierColor, "outline: drafted at once in the latest frontier"},
              {kFrontierArrowColor, "arrow: from the cell whose feature the head read"}};
    case Layer::Rounds:
      return {{heat_color(0), "verified once"}, {heat_color(1.0 / 3), "twice"}, {heat_color(2.0 / 3), "3 times"},
              {heat_color(1), "4 or more times"}};
    case Layer::Islands:
      return {{kSeedColor, "cross: rejected seed (pooled p below τ)"},
              {kExpansionColor, "outline: reopened by a seed's neighbourhood"},
              {island_color(0), "fill: island (colour by id), number: the pass that redrew the cell"},
              {kUpsampledBlockColor, "boxes: the latest up-sampled block, one per low-resolution cell"}};
    case Layer::LowRes:
      return {{kLowResDraftColor, "inset: the low-resolution grid, its latest drafted row outlined"}};
  }
  return {};
}

QImage paint_grid_lines(int rows, int cols, QSize size, QColor color) {
  QImage image(size, QImage::Format_ARGB32);
  image.fill(Qt::transparent);
  if (rows <= 0 || cols <= 0) return image;
  QPainter painter(&image);
  painter.setPen(color);
  for (int r = 1; r < rows; ++r) {
    const int y = r * size.height() / rows;
    painter.drawLine(0, y, size.width() - 1, y);
  }
  for (int c = 1; c < cols; ++c) {
    const int x = c * size.width() / cols;
    painter.drawLine(x, 0, x, size.height() - 1);
  }
  return image;
}

QImage paint_layer(Layer layer, const GridState& grid, QSize size, int last_step) {
  switch (layer) {
    case Layer::TokenState: return paint_token_state_layer(grid, 1).scaled(size);
    case Layer::CommitStep: return paint_commit_step_layer(grid, 1, last_step).scaled(size);
    case Layer::Acceptance: return paint_acceptance_layer(grid, 1).scaled(size);
    case Layer::GridLines: return paint_grid_lines(grid.rows(), grid.cols(), size, QColor(255, 255, 255, 70));
    case Layer::Origin: return paint_origin_layer(grid, 1).scaled(size);
    case Layer::SoftScore: return paint_soft_score_layer(grid, 1).scaled(size);
    case Layer::PooledMass: return paint_pooled_mass_layer(grid, 1).scaled(size);
    case Layer::TargetP: return paint_target_p_layer(grid, 1).scaled(size);
    case Layer::Entropy: return paint_entropy_layer(grid, 1).scaled(size);
    case Layer::Frontier: return paint_frontier_layer(grid, size);
    case Layer::Rounds: return paint_rounds_layer(grid, 1).scaled(size);
    case Layer::Islands: return paint_islands_layer(grid, size);
    case Layer::LowRes: {
      QImage clear(size, QImage::Format_ARGB32);
      clear.fill(Qt::transparent);
      return clear;
    }
  }
  return {};
}

}  // namespace speculum::vis
