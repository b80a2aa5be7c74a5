#include "train/spatial_heads_trainer.h"

#include <c10/core/InferenceMode.h>
#include <torch/optim/adamw.h>

#include "error.h"
#include "models/random_weights.h"

namespace speculum {
namespace {

struct HeadPairs {
  SpatialDirection direction;
  int delta;
  at::Tensor source, destination;  // raster indices [P]: the head reads `source` and predicts `destination`
};

// Every (source, destination) cell pair of each head on a rows x cols grid.
std::vector<HeadPairs> head_pairs(const GptConfig& g, int horizontal, int vertical, at::Device device) {
  std::vector<HeadPairs> out;
  for (const auto& [direction, count] : {std::pair{SpatialDirection::Horizontal, horizontal}, {SpatialDirection::Vertical, vertical}})
    for (int delta = 1; delta <= count; ++delta) {
      std::vector<std::int64_t> source, destination;
      for (int r = 0; r < g.grid_rows; ++r)
        for (int c = 0; c < g.grid_cols; ++c) {
          const int r2 = direction == SpatialDirection::Vertical ? r + delta : r;
          const int c2 = direction == SpatialDirection::Horizontal ? c + delta : c;
          if (r2 >= g.grid_rows || c2 >= g.grid_cols) continue;
          source.push_back(r * g.grid_cols + c);
          destination.push_back(r2 * g.grid_cols + c2);
        }
      out.push_back({direction, delta, at::tensor(source, at::kLong).to(device), at::tensor(destination, at::kLong).to(device)});
    }
  return out;
}

}  // namespace

TensorMap initial_spatial_heads_weights(const GptConfig& target, int horizontal, int vertical, std::uint64_t seed) {
  TensorMap w = random_weights(spatial_heads_tensor_specs(target, horizontal, vertical), seed);
  at::NoGradGuard no_grad;
  const auto d = target.dim;
  for (auto& [name, t] : w) {
    if (t.dim() == 2) t.normal_(0, 0.02);
    if (name.ends_with("norm.weight")) t.fill_(1);
    if (name.ends_with("w2.weight")) t.zero_();
    if (name.ends_with("w0.weight")) t.narrow(1, 0, d).add_(at::eye(d));
  }
  return w;
}

std::vector<double> spatial_heads_fit(const SpatialHeads& heads, const TokenizedCorpus& corpus, int images) {
  c10::InferenceMode inference;
  const Transformer& target = heads.target();
  const auto pairs = head_pairs(target.config(), heads.heads(SpatialDirection::Horizontal),
                                heads.heads(SpatialDirection::Vertical), target.device());
  std::vector<double> acceptance(pairs.size(), 0.0);
  std::int64_t n_images = 0;
  for_each_teacher_batch(target, corpus, images, [&](const at::Tensor& h, const at::Tensor& tokens) {
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      const HeadPairs& hp = pairs[k];
      const at::Tensor predicted = heads.predict(hp.direction, hp.delta, h.index_select(1, hp.source), tokens.index_select(1, hp.source));
      const at::Tensor p = at::softmax(target.head(h.index_select(1, hp.destination)), -1);
      const at::Tensor q = at::softmax(target.head(predicted), -1);
      acceptance[k] += at::minimum(p, q).sum(-1).mean(-1).sum().item<double>();
    }
    n_images += h.size(0);
  });
  for (double& a : acceptance) a = n_images ? a / n_images : 0;
  return acceptance;
}

TensorMap train_spatial_heads(const Transformer& target, const SpatialHeadsTrainParams& params, const std::string& run_dir,
                              const TokenizedCorpus& corpus, const TokenizedCorpus& held_out,
                              const ProgressLine& progress, const std::atomic<bool>* stop) {
  const GptConfig& g = target.config();
  check_corpus(corpus, g);
  CheckpointState state;
  const auto specs = spatial_heads_tensor_specs(g, params.horizontal, params.vertical);
  const auto fresh = [&] {
    return params.init_from.empty() ? initial_spatial_heads_weights(g, params.horizontal, params.vertical, params.seed)
                                    : weights_of_run(params.init_from, specs, "SSD heads");
  };
  TensorMap weights = start_or_resume(run_dir, specs, "SSD heads", fresh, progress, state);
  std::vector<at::Tensor> parameters;  // on the target's device, shared by the heads and the optimizer
  for (auto& [name, t] : weights) parameters.push_back(t = t.to(target.device()).requires_grad_(true));
  const SpatialHeads heads(target, weights, params.horizontal, params.vertical);
  torch::optim::AdamW optimizer(parameters, torch::optim::AdamWOptions(params.schedule.peak_lr).betas({0.9, 0.95}).weight_decay(0));
  if (state.step > 0) load_optimizer_state(optimizer, run_dir, target.device());
  const auto pairs = head_pairs(g, params.horizontal, params.vertical, target.device());

  const int last_step = params.stop_at > 0 ? std::min(params.stop_at, params.schedule.steps) : params.schedule.steps;
  TrainingLog log(run_dir, {"loss", "feature_loss", "ce", "lr", "grad_norm", "held_out_h1", "held_out_v1", "held_out_mean"},
                  last_step, state);
  std::vector<double> fit = {state.values["held_out_h1"], state.values["held_out_v1"], state.values["held_out_mean"]};
  for (int step = state.step; step < last_step; ++step) {
    const double lr = params.schedule.lr_at(step);
    for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    const auto [rows, dropped] = corpus_batch(corpus, params.batch, params.caption_dropout, params.seed, step, 2);
    at::Tensor tokens;
    const at::Tensor h = teacher_features(target, corpus, rows, dropped, tokens);
    at::Tensor feature_loss = at::zeros({}, h.options()), ce = at::zeros({}, h.options());
    for (const HeadPairs& hp : pairs) {
      const at::Tensor wanted = h.index_select(1, hp.destination);
      const at::Tensor predicted = heads.predict(hp.direction, hp.delta, h.index_select(1, hp.source), tokens.index_select(1, hp.source));
      at::Tensor p;
      {
        at::NoGradGuard no_grad;
        p = at::softmax(target.head(wanted), -1);
      }
      feature_loss = feature_loss + at::smooth_l1_loss(predicted, wanted);
      ce = ce - (p * at::log_softmax(target.head(predicted), -1)).sum(-1).mean();
    }
    feature_loss = feature_loss / static_cast<double>(pairs.size());
    ce = ce / static_cast<double>(pairs.size());
    const at::Tensor loss = feature_loss + params.ce_weight * ce;
    optimizer.zero_grad();
    loss.backward();
    const double grad_norm = clip_gradients(parameters, params.grad_clip);
    optimizer.step();

    const bool checkpoint = (step + 1) % params.checkpoint_every == 0 || step + 1 == last_step || (stop && stop->load());
    if (checkpoint && held_out.size() > 0) {
      const std::vector<double> per_head = spatial_heads_fit(heads, held_out, params.held_out_images);
      double mean = 0;
      for (double a : per_head) mean += a / static_cast<double>(per_head.size());
      fit = {per_head.front(), per_head[params.horizontal], mean};
    }
    if ((step + 1) % params.log_every == 0 || checkpoint) {
      const std::vector<double> values = {loss.item<double>(), feature_loss.item<double>(), ce.item<double>(), lr, grad_norm,
                                          fit[0], fit[1], fit[2]};
      log.row(step + 1, values);
      progress(log.progress(step, values));
    }
    if (checkpoint)
      save_checkpoint(run_dir, heads.weights(), optimizer, log, step + 1,
                      {{"held_out_h1", fit[0]}, {"held_out_v1", fit[1]}, {"held_out_mean", fit[2]}}, state);
    if (stop && stop->load()) break;
  }
  return detached_copy(heads.weights());
}

}  // namespace speculum
