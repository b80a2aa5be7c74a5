#include "trace/grid_state.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "error.h"

namespace speculum {

namespace {

// δ of an SSD head's draft source "h_head(δ)" / "v_head(δ)"; 0 for every other source.
int head_offset(const std::string& source) {
  if (!(source.starts_with("h_head(") || source.starts_with("v_head(")) || !source.ends_with(")")) return 0;
  try {
    return std::stoi(source.substr(7, source.size() - 8));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

GridState::GridState(int rows, int cols) : rows_(rows), cols_(cols), cells_(std::size_t(rows) * cols) {}

CellInfo* GridState::cell(const Cell& c) {
  if (c.row < 0 || c.row >= rows_ || c.col < 0 || c.col >= cols_)
    throw Error("event cell (" + std::to_string(c.row) + ", " + std::to_string(c.col) +
                ") is outside the " + std::to_string(rows_) + "x" + std::to_string(cols_) + " grid");
  return &cells_[index(c.row, c.col)];
}

void GridState::apply(const Event& event) {
  std::visit(
      [this](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, RunBegin>) {
          *this = GridState(e.grid_rows, e.grid_cols);
          vocab_size_ = e.vocab_size;
          low_res_rows_ = e.low_res_rows;
          low_res_cols_ = e.low_res_cols;
          low_res_tokens_.assign(std::size_t(std::max(0, e.low_res_rows * e.low_res_cols)), -1);
        } else if constexpr (requires { e.step; }) {
          last_step_ = std::max(last_step_, e.step);
        }
        if constexpr (std::is_same_v<T, Draft>) {
          if (e.source.starts_with("low_res")) {  // the low-resolution grid, not this one
            apply_low_res(e);
            return;
          }
          if (e.source == "upsampler") upsampled_step_ = e.step;
          const int offset = head_offset(e.source);
          for (std::size_t i = 0; i < e.cells.size(); ++i) {
            CellInfo* c = cell(e.cells[i]);
            if (c->state == CellState::Committed) continue;
            c->state = CellState::Drafted;
            c->token = e.tokens.at(i);
            c->q = i < e.q_of_token.size() ? e.q_of_token[i] : -1;
            c->draft_token = c->token;
            c->draft_q = c->q;
            c->last_step = e.step;
            if (e.source == "upsampler") c->upsampled_step = e.step;
            if (offset > 0)
              c->drafted_from = e.source.starts_with("v_head") ? Cell{e.cells[i].row - offset, e.cells[i].col}
                                                              : Cell{e.cells[i].row, e.cells[i].col - offset};
          }
        } else if constexpr (std::is_same_v<T, Frontier>) {
          frontier_step_ = e.step;
          for (const Cell& f : e.cells) cell(f)->frontier_step = e.step;
        } else if constexpr (std::is_same_v<T, Verify>) {
          for (std::size_t i = 0; i < e.cells.size(); ++i) {
            CellInfo* c = cell(e.cells[i]);
            if (c->state == CellState::Committed) continue;
            const Decision d = e.decisions.at(i);
            c->state = d == Decision::StrictAccept ? CellState::Accepted
                       : d == Decision::SoftAccept ? CellState::SoftAccepted
                                                   : CellState::Rejected;
            if (i < e.p_of_token.size()) c->p = e.p_of_token[i];
            // A tree drafts siblings for one cell: the draft that matters is the one verified last (the accepted one).
            c->draft_token = e.tokens.at(i);
            c->draft_q = i < e.q_of_token.size() ? e.q_of_token[i] : -1;
            ++c->times_verified;
            if (d != Decision::Reject) ++c->times_accepted;
            if (d != Decision::Reject) {
              c->origin = d == Decision::StrictAccept ? CellOrigin::StrictAccept : CellOrigin::SoftAccept;
              c->token = e.tokens.at(i);
            }
            if (i < e.soft_delta.size() && e.soft_delta[i] >= 0) c->soft_score = e.soft_score.at(i);
            if (i < e.pooled_p.size() && e.pooled_p[i] > 0) c->pooled_gain = (e.pooled_p[i] - c->p) / e.pooled_p[i];
            c->last_step = e.step;
          }
        } else if constexpr (std::is_same_v<T, Region>) {
          for (const Cell& r : e.cells) {
            CellInfo* c = cell(r);
            if (e.kind == "rejected_seed") c->rejected_seed = true;
            if (e.kind == "expansion") c->expanded = true;
            if (e.kind == "island") c->island = e.island_id;
          }
        } else if constexpr (std::is_same_v<T, Resample>) {
          for (std::size_t i = 0; i < e.cells.size(); ++i) {
            CellInfo* c = cell(e.cells[i]);
            if (c->state == CellState::Committed) continue;
            if (c->island >= 0) c->resample_pass = e.round;
            c->state = CellState::Resampled;
            c->origin = e.dist == "target" ? CellOrigin::Target : CellOrigin::Residual;
            c->token = e.new_tokens.at(i);
            c->p = i < e.p_of_token.size() ? e.p_of_token[i] : -1;
            c->q = -1;
            c->last_step = e.step;
          }
        } else if constexpr (std::is_same_v<T, Commit>) {
          const std::size_t n = e.cells.size();
          if ((!e.entropy.empty() && e.entropy.size() != n) || e.top_tokens.size() != e.top_p.size() ||
              (!e.top_tokens.empty() && e.top_tokens.size() != n * std::size_t(kTopCandidates)))
            throw Error("commit at step " + std::to_string(e.step) + ": entropy, top_tokens and top_p must hold 1, " +
                        std::to_string(kTopCandidates) + " and " + std::to_string(kTopCandidates) + " values per cell");
          for (std::size_t i = 0; i < n; ++i) {
            CellInfo* c = cell(e.cells[i]);
            if (c->state != CellState::Committed) ++committed_;
            c->state = CellState::Committed;
            c->token = e.tokens.at(i);
            if (i < e.p_of_token.size()) c->p = e.p_of_token[i];
            if (!e.entropy.empty()) c->entropy = e.entropy[i];
            c->top_count = 0;
            for (int k = 0; k < kTopCandidates && !e.top_tokens.empty(); ++k) {
              if (e.top_tokens[i * kTopCandidates + k] < 0) break;  // a vocabulary smaller than the list
              c->top_tokens[k] = e.top_tokens[i * kTopCandidates + k];
              c->top_p[k] = e.top_p[i * kTopCandidates + k];
              c->top_count = k + 1;
            }
            c->commit_step = e.step;
            c->last_step = e.step;
          }
        }
      },
      event);
}

void GridState::apply_low_res(const Draft& e) {
  for (std::size_t i = 0; i < e.cells.size(); ++i) {
    const Cell& c = e.cells[i];
    if (c.row < 0 || c.row >= low_res_rows_ || c.col < 0 || c.col >= low_res_cols_)
      throw Error("event cell (" + std::to_string(c.row) + ", " + std::to_string(c.col) + ") is outside the " +
                  std::to_string(low_res_rows_) + "x" + std::to_string(low_res_cols_) + " low-resolution grid");
    low_res_tokens_[std::size_t(c.row * low_res_cols_ + c.col)] = e.tokens.at(i);
  }
  if (e.source == "low_res" && !e.cells.empty()) {
    low_res_draft_step_ = e.step;
    low_res_first_drafted_ = e.cells.front().row * low_res_cols_ + e.cells.front().col;
  }
}

std::vector<int> GridState::committed_tokens() const {
  std::vector<int> tokens(cells_.size(), -1);
  for (std::size_t i = 0; i < cells_.size(); ++i)
    if (cells_[i].state == CellState::Committed) tokens[i] = cells_[i].token;
  return tokens;
}

}  // namespace speculum
