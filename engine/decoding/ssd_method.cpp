#include "decoding/ssd_method.h"

#include <algorithm>
#include <string>

#include "decoding/acceptance.h"
#include "error.h"
#include "sampling/distribution.h"

namespace speculum {

MethodInfo ssd_method_info() {
  return {"ssd",
          "Spatially Speculative Decoding: horizontal heads draft row 0 in chunks, vertical heads draft whole rows from "
          "the committed row above; every cell verified independently with residual auto-correction over rounds, then "
          "committed (lossy for finitely many rounds).",
          {{.name = "horizontal", .label = "Row 0 chunk",
            .help = "Row 0: cells drafted per chunk (at most the bundle's horizontal heads; the default is capped by them)",
            .unit = "cells", .default_value = 5, .min = 1, .max = kMaxHorizontalHeads, .integer = true},
           {.name = "vertical", .label = "Rows drafted at once",
            .help = "Rows drafted at once below the committed row (at most the bundle's vertical heads)", .unit = "rows",
            .default_value = 1, .min = 1, .max = kMaxVerticalHeads, .integer = true, .draft_size = true, .auto_max = 1},
           {.name = "rounds", .label = "Rounds per block",
            .help = "Verify-and-correct rounds per block of rows (0 = commit the drafts unverified)", .unit = "rounds",
            // The paper's r = 2. On the default bundle it loses 5.5 points of the quality protocol, so that bundle
            // recommends 10, the fewest rounds measured within the tolerance (its manifest's method_options).
            .default_value = 2, .min = 0, .max = 16, .integer = true},
           {.name = "row0_rounds", .label = "Row 0 rounds", .help = "Verify-and-correct rounds per chunk of row 0",
            .unit = "rounds", .default_value = 1, .min = 0, .max = 16, .integer = true},
           toggle_param("early_stop", "Early stop",
                        "On: a round that replaces nothing ends the block's rounds and its pass commits", true),
           choice_param("schedule", "Schedule",
                        "Blocks of two rows: joint (rounds over both, one commit) or staged (b rounds, commit the first "
                        "row, i rounds on the second, commit)", {"joint", "staged"}, 0),
           {.name = "staged_b", .label = "Staged: joint rounds",
            .help = "Staged schedule: rounds over both rows before the first row commits", .unit = "rounds",
            .default_value = 1, .min = 1, .max = 16, .integer = true},
           {.name = "staged_i", .label = "Staged: row 2 rounds",
            .help = "Staged schedule: rounds over the second row after that", .unit = "rounds", .default_value = 1,
            .min = 0, .max = 16, .integer = true}}};
}

std::unique_ptr<Method> make_ssd_method(const MethodOptions& options, const MethodResources& r) {
  const MethodInfo info = ssd_method_info();
  const auto value = [&](const char* key) { return static_cast<int>(method_option(options, info, key)); };
  if (!r.ssd_heads)
    throw Error("method 'ssd' needs SSD heads, and bundle '" + r.bundle + "' has none (" +
                how_to_train(r, "speculum-cli train ssd-heads --bundle " + r.bundle + " --corpus CORPUS --out RUN --install") + ")");
  SsdParams p{value("horizontal"), value("vertical"),  value("rounds"),   value("row0_rounds"),
              value("early_stop") != 0, value("schedule") != 0, value("staged_b"), value("staged_i")};
  // Left at its default, a head count is capped by the bundle's heads; asked for, it must fit.
  if (!options.count("horizontal")) p.horizontal = std::min(p.horizontal, r.ssd_heads->heads(SpatialDirection::Horizontal));
  if (!options.count("vertical")) p.vertical = std::min(p.vertical, r.ssd_heads->heads(SpatialDirection::Vertical));
  for (const auto& [direction, wanted] : {std::pair{SpatialDirection::Horizontal, p.horizontal}, {SpatialDirection::Vertical, p.vertical}})
    if (wanted > r.ssd_heads->heads(direction))
      throw Error(std::string("method 'ssd': ") + spatial_direction_name(direction) + " = " + std::to_string(wanted) +
                  ", but bundle '" + r.bundle + "' has " + std::to_string(r.ssd_heads->heads(direction)) + " " +
                  spatial_direction_name(direction) + " heads");
  return std::make_unique<SsdMethod>(*r.ssd_heads, p);
}

SsdMethod::SsdMethod(const SpatialHeads& heads, SsdParams params) : heads_(heads), params_(params) {}

namespace {

// One block of drafted cells (a chunk of row 0 or whole rows) through its rounds and its commit. Round
// k tests every cell whose context changed since its last test: all of them first, then the cells after
// the first one replaced in the round before, each drawn afresh from its head's q (a stale acceptance
// says nothing in a new context). The cells up to the first replaced one are then exact, so enough
// rounds make the block exact speculative sampling, cell after cell.
class BlockRun {
 public:
  BlockRun(DecodeSession& s, at::Tensor& features, int last, const at::Tensor& predicted, std::vector<std::string> sources,
           std::vector<int> source_of)
      : s_(s), features_(features), last_(last), n_(static_cast<int>(source_of.size())), sources_(std::move(sources)),
        source_of_(std::move(source_of)), tokens_(n_, -1) {
    // q of every cell: the target's own head on the predicted features, processed like the target's p.
    q_ = s_.drafting([&] { return s_.distribution(s_.target().head(predicted)).to(at::kCPU).contiguous(); });
  }

  // JOINT: `rounds` verify-and-correct passes (fewer with early stop) and the commit; returns the new last raster.
  int run(int rounds, bool early_stop) {
    std::vector<bool> draft(n_, true);
    if (verify_rounds(0, rounds, early_stop, draft)) return last_ + n_;
    return finish(rounds, draft);
  }

  // STAGED(b, i) [paper, Fig. 8]: b rounds over the whole block, a pass that commits its first `first_cells`
  // (its first row), then i rounds over the rest and their commit. The rest continues the same rule: only
  // the cells after the latest replacement are redrawn and tested again.
  int run_staged(int b, int i, int first_cells, bool early_stop) {
    std::vector<bool> draft(n_, true);
    if (verify_rounds(0, b, early_stop, draft)) return last_ + n_;
    commit_first(first_cells);
    draft.erase(draft.begin(), draft.begin() + first_cells);
    if (verify_rounds(b, i, early_stop, draft)) return last_ + n_;
    return finish(b + i, draft);
  }

 private:
  // Rounds first .. first + count - 1; true when one replaced nothing under early stop and its pass committed.
  bool verify_rounds(int first, int count, bool early_stop, std::vector<bool>& draft) {
    for (int round = first; round < first + count && !s_.cancel_requested(); ++round) {
      s_.begin_step("verify");
      draw(round, draft);
      const ForwardOutput out = s_.forward(input(early_stop));
      const at::Tensor p = s_.distribution(out.logits).to(at::kCPU).contiguous();
      const int first_replaced = verify(round, p, draft);
      if (first_replaced < 0 && early_stop) {  // this pass read the final block
        commit(out, p);
        return true;
      }
      s_.cache().truncate(kv_begin_);
      s_.emit(KVRollback{s_.step(), s_.cache().length()});
      s_.end_step(accept_rate_);
      for (int k = 0; k < n_; ++k) draft[k] = first_replaced >= 0 && k > first_replaced;
    }
    return false;
  }

  // The commit pass after `rounds_done` rounds (with none, the drafts go in unverified).
  int finish(int rounds_done, const std::vector<bool>& draft) {
    s_.begin_step("commit");
    draw(rounds_done, rounds_done == 0 ? draft : std::vector<bool>(n_, false));
    const ForwardOutput out = s_.forward(input(true));
    return commit(out, s_.distribution(out.logits).to(at::kCPU).contiguous());
  }

  // Commits the first `count` cells in a pass of their own; the block becomes the cells after them.
  void commit_first(int count) {
    s_.begin_step("commit");
    const int rest = n_ - count;
    n_ = count;
    const ForwardOutput out = s_.forward(input(true));
    commit(out, s_.distribution(out.logits).to(at::kCPU).contiguous());
    last_ += count;
    n_ = rest;
    tokens_.erase(tokens_.begin(), tokens_.begin() + count);
    source_of_.erase(source_of_.begin(), source_of_.begin() + count);
    q_ = q_.narrow(0, count, rest).contiguous();
  }

  int raster(int i) const { return last_ + 1 + i; }

  // Draws the marked cells from their q (the first time: the frontier) and emits them, head by head.
  void draw(int round, const std::vector<bool>& marked) {
    if (round == 0) {
      Frontier frontier{s_.step(), {}};
      for (int i = 0; i < n_; ++i) frontier.cells.push_back(s_.cell_of(raster(i)));
      s_.emit(frontier);
    }
    for (std::size_t k = 0; k < sources_.size(); ++k) {
      Draft d{s_.step(), round, sources_[k], {}, {}, {}, {}, {}};
      for (int i = 0; i < n_; ++i) {
        if (!marked[i] || source_of_[i] != static_cast<int>(k)) continue;
        tokens_[i] = draw_token(q_[i], s_.uniform(RngStream::Draft, s_.step(), i));
        d.cells.push_back(s_.cell_of(raster(i)));
        d.tokens.push_back(tokens_[i]);
        d.q_of_token.push_back(q_[i][tokens_[i]].item<float>());
      }
      if (!d.cells.empty()) s_.emit(d);
    }
  }

  // The block after the last committed token, which the cache does not hold yet: input j is the token at
  // raster last + j, and its output predicts raster last + j + 1.
  ForwardInput input(bool want_hidden) {
    ForwardInput in;
    std::vector<std::int64_t> tokens = {s_.tokens()[last_]};
    tokens.insert(tokens.end(), tokens_.begin(), tokens_.begin() + n_ - 1);
    in.tokens = at::tensor(tokens, at::kLong);
    for (int j = 0; j < n_; ++j) in.positions.push_back(s_.position_of(last_ + j));
    in.want_hidden = want_hidden;
    kv_begin_ = s_.cache().length();
    return in;
  }

  // Tests the marked cells in order; returns the first replaced cell, or -1.
  int verify(int round, const at::Tensor& p, const std::vector<bool>& marked) {
    Verify verify{s_.step(), round, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
    Resample resample{s_.step(), round, "residual", {}, {}, {}, {}};
    int first_replaced = -1, accepted = 0;
    for (int i = 0; i < n_; ++i) {
      if (!marked[i]) continue;
      const int x = tokens_[i];
      const double p_x = p[i][x].item<double>(), q_x = q_[i][x].item<double>();
      const double u = s_.uniform(RngStream::Accept, s_.step(), i), ratio = strict_acceptance(p_x, q_x);
      const bool accept = u < ratio;
      verify.cells.push_back(s_.cell_of(raster(i)));
      verify.tokens.push_back(x);
      verify.p_of_token.push_back(static_cast<float>(p_x));
      verify.q_of_token.push_back(static_cast<float>(q_x));
      verify.ratio.push_back(static_cast<float>(ratio));
      verify.u.push_back(static_cast<float>(u));
      verify.decisions.push_back(accept ? Decision::StrictAccept : Decision::Reject);
      if (accept) {
        ++accepted;
        continue;
      }
      const at::Tensor residual = residual_distribution(p[i], q_[i]);
      tokens_[i] = draw_token(residual, s_.uniform(RngStream::Resample, s_.step(), i));
      resample.cells.push_back(s_.cell_of(raster(i)));
      resample.old_tokens.push_back(x);
      resample.new_tokens.push_back(tokens_[i]);
      resample.p_of_token.push_back(residual[tokens_[i]].item<float>());
      if (first_replaced < 0) first_replaced = i;
    }
    s_.emit(verify);
    if (!resample.cells.empty()) s_.emit(resample);
    accept_rate_ = verify.cells.empty() ? 1.0 : static_cast<double>(accepted) / static_cast<double>(verify.cells.size());
    return first_replaced;
  }

  int commit(const ForwardOutput& out, const at::Tensor& p) {
    std::vector<int> rasters;
    std::vector<float> probabilities;
    for (int i = 0; i < n_; ++i) {
      rasters.push_back(raster(i));
      probabilities.push_back(p[i][tokens_[i]].item<float>());
    }
    s_.commit(rasters, std::vector<int>(tokens_.begin(), tokens_.begin() + n_), probabilities, p.narrow(0, 0, n_),
              kv_begin_, kv_begin_ + n_);
    features_.narrow(1, last_ + 1, n_).copy_(out.hidden);  // output j is the feature of raster last + 1 + j
    s_.end_step(accept_rate_);
    return last_ + n_;
  }

  DecodeSession& s_;
  at::Tensor& features_;
  int last_, n_;
  std::vector<std::string> sources_;
  std::vector<int> source_of_;  // index into sources_ per cell
  at::Tensor q_;                // [n, V] the heads' distributions
  std::vector<int> tokens_;
  int kv_begin_ = 0;
  double accept_rate_ = 1.0;
};

}  // namespace

void SsdMethod::run(DecodeSession& s) {
  const int cols = s.cols(), rows = s.rows();
  const ForwardOutput first = s.commit_first_token(/*want_hidden=*/true);
  const at::Tensor prefix_hidden = first.hidden.select(1, first.hidden.size(1) - 1);  // [R, dim]: the feature of raster 0
  at::Tensor features = at::zeros({prefix_hidden.size(0), s.total_tokens(), prefix_hidden.size(1)}, prefix_hidden.options());
  features.select(1, 0).copy_(prefix_hidden);
  const auto token_at = [&](int raster) { return at::tensor(static_cast<std::int64_t>(s.tokens()[raster]), at::kLong); };

  int last = 0;
  while (last < cols - 1 && !s.cancel_requested()) {  // row 0, chunk by chunk from the last committed cell
    const int m = std::min(params_.horizontal, cols - 1 - last);
    std::vector<at::Tensor> predicted;
    std::vector<std::string> sources;
    std::vector<int> source_of;
    for (int delta = 1; delta <= m; ++delta) {
      predicted.push_back(
          s.drafting([&] { return heads_.predict(SpatialDirection::Horizontal, delta, features.select(1, last), token_at(last)); }));
      sources.push_back("h_head(" + std::to_string(delta) + ")");
      source_of.push_back(delta - 1);
    }
    BlockRun block(s, features, last, at::stack(predicted, 1), sources, source_of);
    last = block.run(params_.row0_rounds, params_.early_stop);
  }
  for (int y = 1; y < rows && !s.cancel_requested(); y += params_.vertical) {  // blocks of rows below
    const int block_rows = std::min(params_.vertical, rows - y);
    const at::Tensor above = features.narrow(1, (y - 1) * cols, cols);
    const at::Tensor above_tokens =
        at::tensor(std::vector<std::int64_t>(s.tokens().begin() + (y - 1) * cols, s.tokens().begin() + y * cols), at::kLong);
    std::vector<at::Tensor> predicted;
    std::vector<std::string> sources;
    std::vector<int> source_of;
    for (int delta = 1; delta <= block_rows; ++delta) {
      predicted.push_back(s.drafting([&] { return heads_.predict(SpatialDirection::Vertical, delta, above, above_tokens); }));
      sources.push_back("v_head(" + std::to_string(delta) + ")");
      source_of.insert(source_of.end(), cols, delta - 1);
    }
    BlockRun block(s, features, last, at::cat(predicted, 1), sources, source_of);
    last = params_.staged && block_rows > 1 ? block.run_staged(params_.staged_b, params_.staged_i, cols, params_.early_stop)
                                            : block.run(params_.rounds, params_.early_stop);
  }
}

}  // namespace speculum
