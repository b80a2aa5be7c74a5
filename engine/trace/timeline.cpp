#include "trace/timeline.h"

#include <algorithm>
#include <iomanip>
#include <optional>
#include <sstream>
#include <type_traits>

namespace speculum {

Timeline::Timeline(const std::vector<Event>& events) {
  for (const Event& e : events) append(e);
}

void Timeline::append(const Event& event) {
  const std::size_t index = events_.size();
  events_.push_back(event);
  metrics_.apply(event);
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, RunBegin>) {
          run_begin_ = e;
        } else if constexpr (std::is_same_v<T, StepBegin>) {
          if (step_begin_index_.size() == step_end_index_.size()) step_begin_index_.push_back(index);
          open_.step = e.step;
        } else if constexpr (std::is_same_v<T, Verify>) {
          for (Decision d : e.decisions) {
            ++open_.verified;
            if (d != Decision::Reject) ++open_.accepted;
          }
        } else if constexpr (std::is_same_v<T, StepEnd>) {
          if (step_begin_index_.size() == step_end_index_.size()) step_begin_index_.push_back(index);
          StepPoint point = open_;
          point.step = e.step;
          point.committed = e.committed_cells;
          point.forward_passes = e.fwd_passes_step;
          point.wall_ms = e.wall_ms;
          point.tokens_total = (steps_.empty() ? 0 : steps_.back().tokens_total) + e.committed_cells;
          point.nfe_total = (steps_.empty() ? 0 : steps_.back().nfe_total) + e.fwd_passes_step;
          steps_.push_back(point);
          step_end_index_.push_back(index + 1);
          open_ = {};
        } else if constexpr (std::is_same_v<T, RunEnd>) {
          finished_ = true;
        }
      },
      event);
}

std::size_t Timeline::end_of(int steps) const {
  if (steps >= step_count()) return events_.size();
  if (steps <= 0) return step_begin_index_.empty() ? events_.size() : step_begin_index_.front();
  return step_end_index_[steps - 1];
}

GridState Timeline::state_after(int steps) const {
  const std::size_t end = end_of(steps);
  if (end == events_.size()) {
    try {
      for (; latest_end_ < end; ++latest_end_) latest_.apply(events_[latest_end_]);
    } catch (...) {  // a bad event may have been half applied: start over next time (and fail the same way)
      latest_ = {};
      latest_end_ = 0;
      throw;
    }
    return latest_;
  }
  GridState grid;
  for (std::size_t i = 0; i < end; ++i) grid.apply(events_[i]);
  return grid;
}

RunMetrics Timeline::metrics_after(int steps) const {
  const std::size_t end = end_of(steps);
  if (end == events_.size()) return metrics_.metrics();
  MetricsAccumulator metrics;
  for (std::size_t i = 0; i < end; ++i) metrics.apply(events_[i]);
  return metrics.metrics();
}

std::vector<Event> Timeline::events_of_step(int step) const {
  if (step < 0 || step >= static_cast<int>(step_begin_index_.size())) return {};
  const std::size_t end = step < step_count() ? step_end_index_[step] : events_.size();
  return {events_.begin() + static_cast<std::ptrdiff_t>(step_begin_index_[step]), events_.begin() + static_cast<std::ptrdiff_t>(end)};
}

namespace {

// "row 2, column 5"; cells in a row run together: "row 2, columns 5-8; row 3, columns 0-1 and 6 more".
std::string cell_list(const std::vector<Cell>& cells) {
  std::ostringstream out;
  std::size_t i = 0, runs = 0;
  while (i < cells.size() && runs < 3) {
    std::size_t end = i + 1;
    while (end < cells.size() && cells[end].row == cells[i].row && cells[end].col == cells[end - 1].col + 1) ++end;
    out << (runs ? "; " : "") << "row " << cells[i].row << ", column" << (end - i > 1 ? "s " : " ") << cells[i].col;
    if (end - i > 1) out << "\u2013" << cells[end - 1].col;
    i = end;
    ++runs;
  }
  if (i < cells.size()) out << " and " << cells.size() - i << " more";
  return out.str();
}

// The target's favourite token at `cell` in this step, from its Commit (traces that record it).
std::optional<std::pair<int, float>> target_favourite(const std::vector<Event>& step_events, const Cell& cell) {
  for (const Event& event : step_events)
    if (const auto* c = std::get_if<Commit>(&event))
      for (std::size_t i = 0; i < c->cells.size(); ++i)
        if (c->cells[i] == cell && c->top_tokens.size() >= (i + 1) * kTopCandidates && c->top_p.size() == c->top_tokens.size())
          return std::pair{c->top_tokens[i * kTopCandidates], c->top_p[i * kTopCandidates]};
  return std::nullopt;
}

std::string plural(std::size_t n, const std::string& word) {
  const bool sibilant = word.ends_with("s") || word.ends_with("x") || word.ends_with("sh") || word.ends_with("ch");
  return std::to_string(n) + " " + word + (n == 1 ? "" : sibilant ? "es" : "s");
}

// Why the first few soft accepts and rejections went as they did, in words.
void explain_decisions(std::ostringstream& out, const Verify& e, const std::vector<Event>& step_events) {
  int told = 0;
  const std::size_t n = std::min({e.cells.size(), e.decisions.size(), e.tokens.size(), e.p_of_token.size()});
  for (std::size_t i = 0; i < n && told < 3; ++i) {
    const Decision d = e.decisions[i];
    if (d == Decision::StrictAccept) continue;
    const bool lisa = i < e.soft_delta.size() && e.soft_delta[i] >= 0;
    const bool pooled = i < e.pooled_p.size();
    out << " At " << cell_list({e.cells[i]}) << ", token " << e.tokens[i] << " (target p " << e.p_of_token[i];
    if (i < e.u.size()) out << ", u " << e.u[i];
    out << ")";
    if (e.u.empty() && pooled) {  // MuLo-SD: a threshold on the pooled probability, no random test
      out << (d == Decision::SoftAccept ? " reached τ only with its nearest codes' probability pooled in (p̃ "
                                        : " stayed below τ even with its nearest codes pooled in (p̃ ")
          << e.pooled_p[i] << (d == Decision::SoftAccept ? ")." : "): a rejected seed.");
    } else if (d == Decision::SoftAccept && pooled) {
      out << " was accepted only because its codebook neighbours' mass was pooled onto it (p\u0303 " << e.pooled_p[i] << ").";
    } else if (d == Decision::SoftAccept && lisa) {
      out << " failed the exact test but was accepted softly: it lies close to the target's favourite code (whitened distance "
          << e.soft_g[i] << ") or trails it by a small confidence gap (\u0394 " << e.soft_delta[i]
          << "), and the target was unsure.";
    } else if (d == Decision::SoftAccept) {
      out << " was accepted by the relaxed test.";
    } else if (lisa) {
      out << " was rejected: u was above p, and the soft test (score " << e.soft_score[i]
          << (e.soft_score[i] < 0 ? ", outside the calibrated region" : ", inside the region but over a confidence or budget limit")
          << ") did not save it.";
    } else {
      out << " was rejected (u " << (pooled ? "above the pooled probability" : "above p/q") << ").";
    }
    if (d == Decision::Reject)
      if (const auto favourite = target_favourite(step_events, e.cells[i]); favourite && favourite->first != e.tokens[i])
        out << " The target's own favourite there was token " << favourite->first << " (p " << favourite->second << ").";
    ++told;
  }
}

}  // namespace

std::string explain_step(const std::vector<Event>& step_events, int step_index, int step_count) {
  std::ostringstream out;
  out << std::setprecision(3);
  out << "Step " << step_index + 1 << " of " << step_count << ".";
  std::size_t islands = 0, largest_island = 0;  // MuLo-SD's islands, told once they are all known
  bool told_exact_rule = false;
  for (const Event& event : step_events) {
    if (islands > 0 && !std::holds_alternative<Region>(event) && largest_island > 0) {
      out << " They form " << plural(islands, "8-connected island") << " (the largest " << plural(largest_island, "cell")
          << "), each redrawn from the target cell by cell in raster order.";
      largest_island = 0;  // told
    }
    std::visit(
        [&](const auto& e) {
          using T = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<T, Draft>) {
            if (!e.tree_parent.empty() && !e.cells.empty()) {
              const int depth = *std::max_element(e.tree_depth.begin(), e.tree_depth.end());
              out << " The drafter grew a tree of " << plural(e.cells.size(), "candidate token") << ", " << depth
                  << " deep, for the " << plural(static_cast<std::size_t>(depth), "cell") << " from " << cell_list({e.cells.front()})
                  << " on (see the draft tree).";
            } else if (e.source.starts_with("v_head(") || e.source.starts_with("h_head(")) {
              const std::string delta = e.source.substr(7, e.source.size() - 8);
              out << (e.round > 0 ? " Their context changed, so " : " ") << "SSD's "
                  << (e.source[0] == 'v' ? "vertical" : "horizontal") << " head " << delta << " drew "
                  << plural(e.cells.size(), "token") << " at " << cell_list(e.cells) << " from the committed cell"
                  << (e.source[0] == 'v' ? "s " + delta + (delta == "1" ? " row above." : " rows above.")
                                         : " " + delta + " to the left.");
            } else if (e.source == "low_res") {
              out << " MuLo-SD's low-resolution drafter drew " << plural(e.cells.size(), "token") << ", one after another, at "
                  << cell_list(e.cells) << " of its own smaller grid (the inset).";
            } else if (e.source == "upsampler") {
              out << " The pixel up-sampler (decode, enlarge, encode again) turned them into " << plural(e.cells.size(), "token")
                  << " of the full grid at " << cell_list(e.cells) << ".";
            } else if (e.source == "low_res_prefix") {
              out << " The committed rows, shrunk and encoded again, replaced the drafted low-resolution row in the drafter's "
                     "prefix (its cache rolled back).";
            } else {
              out << " The drafter (" << e.source << ") proposed " << plural(e.cells.size(), "token") << " at "
                  << cell_list(e.cells) << ".";
            }
          } else if constexpr (std::is_same_v<T, Frontier>) {
            out << " The drafting frontier holds " << plural(e.cells.size(), "cell") << ", drafted at once.";
          } else if constexpr (std::is_same_v<T, Verify>) {
            if (e.round > 0) out << " Verification round " << e.round + 1 << ".";
            const auto strict = std::count(e.decisions.begin(), e.decisions.end(), Decision::StrictAccept);
            const auto soft = std::count(e.decisions.begin(), e.decisions.end(), Decision::SoftAccept);
            const auto rejected = std::count(e.decisions.begin(), e.decisions.end(), Decision::Reject);
            if (e.u.empty() && !e.pooled_p.empty()) {
              out << " One target pass scored them all: " << strict << " accepted on their own probability (≥ τ), " << soft
                  << " by pooling their nearest codes' probability, " << rejected << " rejected.";
            } else {
              out << " One target pass verified them: " << strict << " accepted (u < p/q)";
              if (soft > 0) out << ", " << soft << " accepted by the relaxed test";
              out << ", " << rejected << " rejected.";
              if (strict > 0 && !told_exact_rule) {
                out << " (A draft token x with draft probability q is kept when a uniform u < p(x)/q(x), p being the target's"
                       " probability: the exact rule, which leaves the target's distribution unchanged.)";
                told_exact_rule = true;
              }
            }
            explain_decisions(out, e, step_events);
          } else if constexpr (std::is_same_v<T, Resample>) {
            if (islands > 0) out << " Resampling pass " << e.round + 1 << ":";
            out << " " << plural(e.cells.size(), "token") << " at " << cell_list(e.cells) << (e.cells.size() == 1 ? " was" : " were")
                << " drawn again from the " << e.dist << " distribution.";
          } else if constexpr (std::is_same_v<T, Region>) {
            if (e.kind == "rejected_seed") {
              out << " The rejected cells are seeds: " << cell_list(e.cells) << ".";
            } else if (e.kind == "expansion") {
              out << " Each seed reopens the cells within " << e.radius << " row" << (e.radius == 1 ? "" : "s")
                  << " and column" << (e.radius == 1 ? "" : "s") << " of it in this block: " << plural(e.cells.size(), "cell") << ".";
            } else {
              ++islands;
              largest_island = std::max(largest_island, e.cells.size());
            }
          } else if constexpr (std::is_same_v<T, KVRollback>) {
            out << " The KV cache rolled back to " << e.to_len << " entries.";
          } else if constexpr (std::is_same_v<T, Commit>) {
            if (e.cells.size() == 1) {
              out << " Committed the token " << e.tokens.front() << " at " << cell_list(e.cells);
              if (!e.p_of_token.empty()) out << " (target probability " << e.p_of_token.front() << ")";
              out << ".";
            } else {
              out << " Committed " << plural(e.cells.size(), "token") << " at " << cell_list(e.cells) << ".";
            }
          } else if constexpr (std::is_same_v<T, StepEnd>) {
            out << " " << plural(static_cast<std::size_t>(std::max(0, e.fwd_passes_step)), "target forward pass") << ", "
                << plural(static_cast<std::size_t>(std::max(0, e.committed_cells)), "token") << " committed, " << std::fixed
                << std::setprecision(1) << e.wall_ms << " ms." << std::defaultfloat << std::setprecision(3);
            if (e.fwd_passes_step > 0 && e.committed_cells > e.fwd_passes_step)
              out << " Plain ar would have committed " << plural(static_cast<std::size_t>(e.fwd_passes_step), "token")
                  << " with as many passes: this step gained " << e.committed_cells - e.fwd_passes_step << ".";
            else if (e.fwd_passes_step > 0 && e.committed_cells == e.fwd_passes_step)
              out << " Plain ar would have committed as many with the same passes: no gain in this step.";
            else if (e.fwd_passes_step > 0)
              out << " Plain ar would have committed " << plural(static_cast<std::size_t>(e.fwd_passes_step), "token")
                  << " with these passes: this step fell behind by " << e.fwd_passes_step - e.committed_cells << ".";
          }
        },
        event);
  }
  return out.str();
}

}  // namespace speculum
