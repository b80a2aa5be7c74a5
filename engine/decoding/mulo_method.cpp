#include "decoding/mulo_method.h"

#include <algorithm>
#include <span>

#include "decoding/acceptance.h"
#include "decoding/local_regions.h"
#include "error.h"
#include "sampling/distribution.h"

namespace speculum {

MethodInfo mulo_method_info() {
  return {"mulo",
          "Multi-Scale Local Speculative Decoding: a low-resolution drafter drafts rows, the pixel up-sampler turns them "
          "into full-resolution rows verified in one pass by pooled probability; rejected cells and their neighbourhood "
          "are resampled from the target as islands (lossy).",
          {{.name = "tau", .label = "Threshold τ",
            .help = "Accept a cell when the target's probability of its token plus its k nearest codes reaches this (ours)",
            // The paper gives no value. 0.9 is the only one measured within the 3-point tolerance on the default
            // bundle's protocol (0.01: -8.1, 0.5: -4.3; docs/benchmarks/studies.md).
            .default_value = 0.9, .min = 0, .max = 1},
           {.name = "neighbours", .label = "Neighbours k",
            .help = "Nearest codes pooled with the drafted token (0 = the token alone)", .unit = "codes",
            .default_value = 20, .min = 0, .max = 1000, .integer = true},
           {.name = "radius", .label = "Radius l",
            .help = "A rejected cell reopens the cells within l rows and columns of it in its block", .unit = "cells",
            .default_value = 1, .min = 0, .max = 8, .integer = true},
           {.name = "rows_per_cycle", .label = "Low-res rows per cycle",
            .help = "Low-resolution rows drafted per cycle (each becomes r full-resolution rows)", .unit = "rows",
            .default_value = 1, .min = 1, .max = 64, .integer = true, .draft_size = true, .auto_max = 1},
           toggle_param("parallel", "Parallel islands",
                        "On: the islands are resampled side by side (one target pass per island position); off: one "
                        "cell per pass", true)}};
}

std::unique_ptr<Method> make_mulo_method(const MethodOptions& options, const MethodResources& r) {
  const MethodInfo info = mulo_method_info();
  if (!r.low_res_drafter)
    throw Error("method 'mulo' needs a low-resolution drafter, and bundle '" + r.bundle +
                "' has none (" +
                how_to_train(r, "speculum-cli train tokenize --downscale 2, train target on that corpus, then train install-low-res --run RUN "
                                "--bundle " + r.bundle) + ")");
  if (!r.tokenizer || !r.geometry) throw Error("method 'mulo' needs the bundle's tokenizer and its codebook geometry");
  MuloParams p;
  p.tau = method_option(options, info, "tau");
  p.neighbours = static_cast<int>(method_option(options, info, "neighbours"));
  p.radius = static_cast<int>(method_option(options, info, "radius"));
  p.rows_per_cycle = static_cast<int>(method_option(options, info, "rows_per_cycle"));
  p.parallel_islands = method_option(options, info, "parallel") != 0;
  if (p.neighbours > r.geometry->neighbours())
    throw Error("method 'mulo': neighbours = " + std::to_string(p.neighbours) + ", but the codebook has " +
                std::to_string(r.geometry->neighbours()) + " neighbours per code");
  return std::make_unique<MuloMethod>(*r.low_res_drafter, *r.tokenizer, *r.geometry, p);
}

MuloMethod::MuloMethod(const Transformer& drafter, const VqModel& tokenizer, const CodebookGeometry& geometry, MuloParams params)
    : drafter_(drafter), tokenizer_(tokenizer), geometry_(geometry), params_(params) {}

namespace {

at::Tensor long_tensor(std::span<const int> values) {
  return at::tensor(std::vector<std::int64_t>(values.begin(), values.end()), at::kLong);
}

// The low-resolution drafter's side of a run: its own cache and condition prefix, the low-resolution grid
// (drafted rows, then the down-sampled committed ones), and the distribution of the next cell.
class LowResDrafting {
 public:
  LowResDrafting(DecodeSession& s, const Transformer& drafter)
      : s_(s), drafter_(drafter), cells_(drafter.config().image_tokens()), tokens_(cells_, -1) {
    const ConditionPrefix prefix = s.condition_for(drafter);
    cache_ = std::make_unique<KVCache>(drafter.make_cache(static_cast<int>(prefix.embeddings.size(0)), 0));
    next_ = distribution_of(drafter.forward(DecodeSession::prefix_input(drafter, prefix), *cache_));
    prefix_slots_ = cache_->length();
  }

  int rows() const { return drafter_.config().grid_rows; }
  int cols() const { return drafter_.config().grid_cols; }
  Cell cell_of(int raster) const { return {raster / cols(), raster % cols()}; }
  at::Tensor grid() const { return long_tensor(tokens_).reshape({rows(), cols()}); }

  // Draws cells [begin, end) one after another from the drafter's processed q.
  Draft draft(int begin, int end) {
    Draft d{s_.step(), 0, "low_res", {}, {}, {}, {}, {}};
    if (fed_ < begin) {  // the corrected rows since the last draft, in one pass
      next_ = distribution_of(drafter_.forward(input(fed_, begin), *cache_));
      fed_ = begin;
    }
    for (int i = begin; i < end; ++i) {
      const int token = draw_token(next_, s_.uniform(RngStream::Draft, s_.step(), i));
      tokens_[i] = token;
      d.cells.push_back(cell_of(i));
      d.tokens.push_back(token);
      d.q_of_token.push_back(next_[token].item<float>());
      if (i + 1 < end) {
        next_ = distribution_of(drafter_.forward(input(i, i + 1), *cache_));
        fed_ = i + 1;
      }
    }
    return d;
  }

  // Replaces the drafted cells from `begin` on by `tokens` (the committed image, down-sampled) and rolls the
  // cache back to `begin`: the next draft re-feeds them.
  Draft correct(int begin, const std::vector<int>& tokens) {
    Draft d{s_.step(), 0, "low_res_prefix", {}, tokens, {}, {}, {}};
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      tokens_[begin + i] = tokens[i];
      d.cells.push_back(cell_of(begin + static_cast<int>(i)));
    }
    cache_->truncate(prefix_slots_ + begin);
    fed_ = begin;
    return d;
  }

 private:
  at::Tensor distribution_of(const ForwardOutput& out) const {
    return s_.distribution(out.logits.narrow(1, out.logits.size(1) - 1, 1)).to(at::kCPU)[0];
  }
  ForwardInput input(int begin, int end) const {
    ForwardInput in;
    in.tokens = long_tensor(std::span(tokens_).subspan(begin, end - begin));
    for (int i = begin; i < end; ++i) in.positions.push_back(drafter_.config().cls_token_num + i);
    in.logits_last = 1;
    return in;
  }

  DecodeSession& s_;
  const Transformer& drafter_;
  int cells_;
  std::vector<int> tokens_;
  std::unique_ptr<KVCache> cache_;
  int prefix_slots_ = 0;
  int fed_ = 0;  // cells whose keys and values the cache holds
  at::Tensor next_;  // [V] q of cell fed_ (after a draft: of the cell after the last fed one)
};

}  // namespace

void MuloMethod::run(DecodeSession& s) {
  const int factor = s.rows() / drafter_.config().grid_rows;
  const PixelScaler scaler(tokenizer_, factor);
  const int cols = s.cols();
  s.commit_first_token(/*want_hidden=*/false);
  const int prefix_slots = s.cache().length();
  LowResDrafting low_res(s, drafter_);
  const int vocab = static_cast<int>(geometry_.vocab());
  int kv_valid = 0;  // image cells whose keys and values in the target's cache hold their current tokens
  std::vector<int> block;  // the block's tokens
  int begin = 0;
  const auto token_at = [&](int raster) { return raster < begin ? s.tokens()[raster] : block[raster - begin]; };
  // Target distributions of cells first..last from one pass that re-feeds every cell from kv_valid on.
  const auto score = [&](int first, int last) {
    const int start = std::min(kv_valid, first - 1);
    if (prefix_slots + start < s.cache().length()) {
      s.cache().truncate(prefix_slots + start);
      s.emit(KVRollback{s.step(), s.cache().length()});
    }
    ForwardInput in;
    std::vector<int> tokens;
    for (int raster = start; raster < last; ++raster) {
      tokens.push_back(token_at(raster));
      in.positions.push_back(s.position_of(raster));
    }
    in.tokens = long_tensor(tokens);
    in.logits_last = last - first + 1;
    const at::Tensor p = s.distribution(s.forward(in).logits).to(at::kCPU).contiguous();
    kv_valid = last;
    return p;  // row i: cell first + i
  };
  at::Tensor context;  // pixels of the last committed low row's worth of full-resolution rows

  for (int low_row = 0; low_row < low_res.rows() && !s.cancel_requested(); low_row += params_.rows_per_cycle) {
    const int low_rows = std::min(params_.rows_per_cycle, low_res.rows() - low_row);
    const int row0 = low_row * factor, end = (low_row + low_rows) * factor * cols;
    begin = std::max(row0 * cols, 1);  // cell 0 came from the target's first pass
    s.begin_step("verify");
    s.emit(s.drafting([&] { return low_res.draft(low_row * low_res.cols(), (low_row + low_rows) * low_res.cols()); }));
    // U_r on a band: the drafted low rows and one committed low row above them, whose pixels come from the
    // committed image (`context`), so the tokenizer sees the new rows continue it; cheaper than the whole grid.
    const int band_low = std::max(0, low_row - 1), context_rows = (low_row - band_low) * factor;
    const at::Tensor high = s.drafting([&] {
      return scaler.up(low_res.grid().narrow(0, band_low, low_row + low_rows - band_low), context, context_rows)
          .narrow(0, context_rows, low_rows * factor)
          .reshape({-1})
          .contiguous();
    });
    block.assign(high.data_ptr<std::int64_t>() + (begin - row0 * cols), high.data_ptr<std::int64_t>() + high.numel());
    Draft up{s.step(), 0, "upsampler", {}, block, {}, {}, {}};
    for (int raster = begin; raster < end; ++raster) up.cells.push_back(s.cell_of(raster));
    s.emit(up);

    // One pass scores every up-sampled cell; pooled probability against τ.
    at::Tensor p = score(begin, end - 1);
    int p_first = begin;
    Verify verify{s.step(), 0, up.cells, block, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
    std::vector<Cell> seeds;
    std::vector<float> p_final(block.size());
    std::vector<at::Tensor> judging_rows(block.size());  // the target row each final token was judged by
    for (int raster = begin; raster < end; ++raster) {
      const int i = raster - begin, x = block[i];
      const std::span<const float> row(p[raster - p_first].data_ptr<float>(), vocab);
      const double pooled = neighbourhood_probability(row, x, geometry_.nearest(x), params_.neighbours);
      p_final[i] = row[x];
      judging_rows[i] = p[raster - p_first];
      verify.p_of_token.push_back(row[x]);
      verify.pooled_p.push_back(static_cast<float>(pooled));
      verify.decisions.push_back(row[x] >= params_.tau ? Decision::StrictAccept
                                 : pooled >= params_.tau ? Decision::SoftAccept
                                                         : Decision::Reject);
      if (pooled < params_.tau) seeds.push_back(s.cell_of(raster));
    }
    s.emit(verify);
    const double accept_rate = 1.0 - static_cast<double>(seeds.size()) / static_cast<double>(block.size());

    // Local expansion and islands; resampling passes, each after the first its own target pass.
    std::vector<std::vector<int>> passes;
    if (!seeds.empty()) {
      s.emit(Region{s.step(), "rejected_seed", -1, 0, seeds});
      const std::vector<Cell> expanded = expand_region(seeds, params_.radius, cols, begin, end);
      s.emit(Region{s.step(), "expansion", -1, params_.radius, expanded});
      const auto islands = islands_8connected(expanded);
      for (std::size_t id = 0; id < islands.size(); ++id)
        s.emit(Region{s.step(), "island", static_cast<int>(id), params_.radius, islands[id]});
      for (const auto& island : islands)
        for (std::size_t j = 0; j < island.size(); ++j) {
          const std::size_t pass = params_.parallel_islands ? j : passes.size();
          if (passes.size() <= pass) passes.resize(pass + 1);
          passes[pass].push_back(island[j].row * cols + island[j].col);
        }
    }
    for (std::size_t pass = 0; pass < passes.size(); ++pass) {
      if (pass > 0) {
        s.end_step(accept_rate);
        s.begin_step("resample");
        const auto [lo, hi] = std::minmax_element(passes[pass].begin(), passes[pass].end());
        p = score(*lo, *hi);
        p_first = *lo;
      }
      Resample resample{s.step(), static_cast<int>(pass), "target", {}, {}, {}, {}};
      for (const int raster : passes[pass]) {
        const int i = raster - begin;
        const at::Tensor row = p[raster - p_first];
        resample.cells.push_back(s.cell_of(raster));
        resample.old_tokens.push_back(block[i]);
        block[i] = draw_token(row, s.uniform(RngStream::Resample, s.step(), raster));
        resample.new_tokens.push_back(block[i]);
        p_final[i] = row[block[i]].item<float>();
        judging_rows[i] = row;
        resample.p_of_token.push_back(p_final[i]);
        kv_valid = std::min(kv_valid, raster);  // its slot holds the old token
      }
      s.emit(resample);
    }
    std::vector<int> rasters;
    for (int raster = begin; raster < end; ++raster) rasters.push_back(raster);
    s.commit(rasters, block, p_final, at::stack(judging_rows), prefix_slots + begin, prefix_slots + end);
    if (end < s.total_tokens()) {  // D_r: the committed rows, shrunk, become the drafter's prefix
      // On a band again: the cycle's rows and one low row's worth above; its last low row's pixels are the next context.
      s.emit(s.drafting([&] {
        const at::Tensor band = long_tensor(s.tokens()).reshape({s.rows(), cols}).narrow(0, band_low * factor, end / cols - band_low * factor);
        const at::Tensor pixels = scaler.pixels(band);
        const std::int64_t low_row_pixels = pixels.size(2) / (low_row + low_rows - band_low);
        context = pixels.narrow(2, pixels.size(2) - low_row_pixels, low_row_pixels);
        const at::Tensor low = scaler.down(pixels).narrow(0, low_row - band_low, low_rows).reshape({-1}).contiguous();
        return low_res.correct(low_row * low_res.cols(),
                               std::vector<int>(low.data_ptr<std::int64_t>(), low.data_ptr<std::int64_t>() + low.numel()));
      }));
    }
    s.end_step(accept_rate);
  }
}

}  // namespace speculum
