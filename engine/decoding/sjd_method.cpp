#include "decoding/sjd_method.h"

#include <algorithm>

#include "decoding/acceptance.h"
#include "sampling/distribution.h"

namespace speculum {

MethodInfo sjd_method_info() {
  return {
      "sjd",
      "Speculative Jacobi Decoding: the target drafts for itself over a window of tokens, verified with probabilistic "
      "Jacobi acceptance and residual resampling (training-free, lossless).",
      {{.name = "window", .label = "Jacobi window",
        .help = "Tokens per Jacobi window (the committed token plus window - 1 drafts)", .unit = "tokens",
        .default_value = 16, .min = 2, .max = 64, .integer = true, .draft_size = true},
       choice_param("init", "New slots start as",
                    "How a slot entering the window is initialised: its left neighbour's token (a spatial prior) or a "
                    "uniformly random token", {"left neighbour", "random token"}, 0)}};
}

void SjdMethod::run(DecodeSession& s) {
  const int total = s.total_tokens(), vocab = s.target().config().vocab_size;
  s.commit_first_token(/*want_hidden=*/false);

  // Drafts for rasters last + 1, last + 2, ...; q undefined means a deterministic initial guess (one-hot).
  std::vector<int> drafts;
  std::vector<at::Tensor> q_of;
  int last = 0;
  while (last + 1 < total && !s.cancel_requested()) {
    s.begin_step("verify");
    const int m = std::min(window_ - 1, total - 1 - last);
    drafts.resize(std::min<std::size_t>(drafts.size(), m));
    q_of.resize(drafts.size());
    while (static_cast<int>(drafts.size()) < m) {
      const int raster = last + 1 + static_cast<int>(drafts.size());
      const int left = raster % s.cols() == 0 ? -1 : (raster - 1 <= last ? s.tokens()[raster - 1] : drafts.back());
      drafts.push_back(
          !random_init_ && left >= 0
              ? left
              : std::min(vocab - 1, static_cast<int>(s.uniform(RngStream::Draft, s.step(), 1000 + raster) * vocab)));
      q_of.emplace_back();
    }
    Draft draft{s.step(), 0, "jacobi", {}, drafts, {}, {}, {}};
    for (int i = 0; i < m; ++i) {
      draft.cells.push_back(s.cell_of(last + 1 + i));
      draft.q_of_token.push_back(q_of[i].defined() ? q_of[i][drafts[i]].item<float>() : 1.0f);
    }
    s.emit(draft);

    ForwardInput in;
    std::vector<std::int64_t> tokens = {s.tokens()[last]};
    tokens.insert(tokens.end(), drafts.begin(), drafts.end());
    in.tokens = at::tensor(tokens, at::kLong);
    for (int i = 0; i <= m; ++i) in.positions.push_back(s.position_of(last + i));
    const int kv_begin = s.cache().length();
    const ForwardOutput out = s.forward(in);
    const at::Tensor p_rows = s.distribution(out.logits).to(at::kCPU).contiguous();  // row j: raster last + 1 + j

    // Row j - 1 predicts draft j's raster from the window up to draft j - 1.
    Verify verify{s.step(), 0, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
    int accepted = 0;
    int correction = -1;
    at::Tensor correction_p;
    for (int i = 0; i < m; ++i) {
      const at::Tensor& p = p_rows[i];
      at::Tensor q = q_of[i];
      if (!q.defined()) {  // an initial guess: deterministic, q one-hot at the draft
        q = at::zeros({vocab}, at::kFloat);
        q[drafts[i]] = 1.0f;
      }
      const double p_x = p[drafts[i]].item<double>(), q_x = q[drafts[i]].item<double>();
      const double u = s.uniform(RngStream::Accept, s.step(), i);
      const double ratio = strict_acceptance(p_x, q_x);
      const bool accept = u < ratio;
      verify.cells.push_back(s.cell_of(last + 1 + i));
      verify.tokens.push_back(drafts[i]);
      verify.p_of_token.push_back(static_cast<float>(p_x));
      verify.q_of_token.push_back(static_cast<float>(q_x));
      verify.ratio.push_back(static_cast<float>(ratio));
      verify.u.push_back(static_cast<float>(u));
      verify.decisions.push_back(accept ? Decision::StrictAccept : Decision::Reject);
      if (!accept) {
        correction_p = residual_distribution(p, q);
        correction = draw_token(correction_p, s.uniform(RngStream::Resample, s.step(), i));
        break;
      }
      ++accepted;
    }
    s.emit(verify);

    std::vector<int> rasters, committed;
    std::vector<float> probabilities;
    for (int i = 0; i < accepted; ++i) {
      rasters.push_back(last + 1 + i);
      committed.push_back(drafts[i]);
      probabilities.push_back(p_rows[i][drafts[i]].item<float>());
    }
    const int next_raster = last + 1 + accepted;
    if (correction >= 0) {
      s.emit(Resample{s.step(),
                      0,
                      "residual",
                      {s.cell_of(next_raster)},
                      {drafts[accepted]},
                      {correction},
                      {correction_p[correction].item<float>()}});
    } else if (next_raster < total) {  // every draft accepted: a bonus token from the last row
      correction_p = p_rows[m];
      correction = draw_token(correction_p, s.uniform(RngStream::Sample, s.step(), 0));
      s.emit(Resample{s.step(),
                      0,
                      "target",
                      {s.cell_of(next_raster)},
                      {-1},
                      {correction},
                      {correction_p[correction].item<float>()}});
    }
    if (correction >= 0) {
      rasters.push_back(next_raster);
      committed.push_back(correction);
      probabilities.push_back(correction_p[correction].item<float>());
    }
    // The target keeps the rows of the committed token it read and the accepted drafts.
    s.cache().truncate(kv_begin + 1 + accepted);
    s.emit(KVRollback{s.step(), s.cache().length()});
    // Row j judged raster last + 1 + j: the accepted drafts, then the correction's (before the residual) or the bonus's.
    s.commit(rasters, committed, probabilities, p_rows.narrow(0, 0, static_cast<std::int64_t>(rasters.size())), kv_begin,
             kv_begin + 1 + accepted);

    // The rest of the window: fresh samples of the rows past the correction, with their distributions as q.
    std::vector<int> next_drafts;
    std::vector<at::Tensor> next_q;
    for (int j = accepted + 1; j <= m && next_raster + static_cast<int>(next_drafts.size()) + 1 < total; ++j) {
      next_q.push_back(p_rows[j]);
      next_drafts.push_back(draw_token(p_rows[j], s.uniform(RngStream::Draft, s.step(), j)));
    }
    drafts = std::move(next_drafts);
    q_of = std::move(next_q);
    last = rasters.back();
    s.end_step(static_cast<double>(accepted) / std::max(1, static_cast<int>(verify.cells.size())));
  }
}

}  // namespace speculum
