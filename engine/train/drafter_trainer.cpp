#include "train/drafter_trainer.h"

#include <c10/core/InferenceMode.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>

#include <cmath>
#include <filesystem>

#include "error.h"
#include "models/random_weights.h"
#include "sampling/counter_rng.h"

namespace speculum {

double codebook_locality_radius(const at::Tensor& codes, int neighbours) {
  const at::Tensor c = codes.to(at::kCPU, at::kFloat);
  const auto k = std::min<std::int64_t>(neighbours, c.size(0) - 1);
  if (k < 1) throw Error("the codebook needs at least two codes");
  const at::Tensor distances = at::cdist(c, c);  // self at distance 0 is the first of each row
  return std::get<0>(at::topk(distances, k + 1, -1, /*largest=*/false)).select(1, k).mean().item<double>();
}

TensorMap initial_drafter_weights(const GptConfig& target, std::uint64_t seed) {
  TensorMap w = random_weights(drafter_tensor_specs(target), seed);
  at::NoGradGuard no_grad;
  for (auto& [name, t] : w)
    if (t.dim() == 2) t.normal_(0, 0.02);
  const auto d = target.dim;
  at::Tensor& fc = w.at("fc.weight");
  fc.mul_(0.1);
  fc.narrow(1, d, d).add_(at::eye(d));  // the feature half passes through
  w.at("layers.0.attention.wo.weight").zero_();
  w.at("layers.0.feed_forward.w2.weight").zero_();
  return w;
}

namespace {

// Per-position drafting terms: the drafter's predicted features for inputs 0..N-2 against the target's
// features 1..N-1.
struct DraftTerms {
  at::Tensor feature_loss;  // [B, N-1]
  at::Tensor ce;            // [B, N-1]
};

// Locality-Informed Distillation's pieces, computed once from the codebook.
struct Locality {
  at::Tensor within_radius;  // [V, V] float: 1 where codes u and v are within ρ
  at::Tensor smoothing;      // [V, V] row-stochastic kernel exp(-|E_u - E_v|² / σ²)
};

Locality locality_of(const at::Tensor& codes, int neighbours) {
  const at::Tensor c = codes.to(at::kFloat);
  const double rho = codebook_locality_radius(c, neighbours);
  const at::Tensor distances = at::cdist(c, c);
  // σ = ρ / 2: a code keeps most of its own mass and shares the rest with the codes inside its ball.
  const at::Tensor kernel = at::exp(-distances.pow(2) / (0.25 * rho * rho));
  return {(distances <= rho).to(at::kFloat), kernel / kernel.sum(-1, true)};
}

}  // namespace

DrafterFitReport drafter_fit(const Drafter& drafter, const TokenizedCorpus& corpus, int images) {
  c10::InferenceMode inference;
  const Transformer& target = drafter.target();
  double acceptance = 0, top1 = 0;
  std::int64_t count = 0;
  for_each_teacher_batch(target, corpus, images, [&](const at::Tensor& h, const at::Tensor& tokens) {
    const auto len = tokens.size(1);
    const at::Tensor predicted = drafter.forward_teacher(tokens.narrow(1, 0, len - 1), h.narrow(1, 0, len - 1));
    const at::Tensor p = at::softmax(target.head(h.narrow(1, 1, len - 1)), -1);
    const at::Tensor q = at::softmax(target.head(predicted), -1);
    acceptance += at::minimum(p, q).sum(-1).sum().item<double>();
    top1 += (p.argmax(-1) == q.argmax(-1)).sum().item<double>();
    count += p.size(0) * p.size(1);
  });
  return count ? DrafterFitReport{acceptance / count, top1 / count} : DrafterFitReport{};
}

TensorMap train_drafter(const Transformer& target, const at::Tensor& codes, const DrafterTrainParams& params,
                        const std::string& run_dir, const TokenizedCorpus& corpus, const TokenizedCorpus& held_out,
                        const ProgressLine& progress, const std::atomic<bool>* stop) {
  const GptConfig& g = target.config();
  check_corpus(corpus, g);
  if (codes.size(0) != g.vocab_size)
    throw Error("the codebook has " + std::to_string(codes.size(0)) + " codes; the target's vocabulary has " +
                std::to_string(g.vocab_size));
  CheckpointState state;
  const auto fresh = [&] {
    return params.init_from.empty() ? initial_drafter_weights(g, params.seed)
                                    : weights_of_run(params.init_from, drafter_tensor_specs(g), "drafter");
  };
  TensorMap weights = start_or_resume(run_dir, drafter_tensor_specs(g), "drafter", fresh, progress, state);
  const bool resume = state.step > 0;
  std::vector<at::Tensor> parameters;  // on the target's device, so the drafter and the optimizer share them
  for (auto& [name, t] : weights) parameters.push_back(t = t.to(target.device()).requires_grad_(true));
  const Drafter drafter(target, weights);
  torch::optim::AdamW optimizer(
      parameters,
      torch::optim::AdamWOptions(params.schedule.peak_lr).betas({0.9, 0.95}).weight_decay(params.weight_decay));
  if (resume) load_optimizer_state(optimizer, run_dir, target.device());

  const bool lisa = params.objective == DrafterObjective::Lisa;
  const Locality locality = lisa ? locality_of(codes.to(target.device()), params.locality_neighbours) : Locality{};
  const double log_vocab = std::log(static_cast<double>(g.vocab_size));

  const int last_step = params.stop_at > 0 ? std::min(params.stop_at, params.schedule.steps) : params.schedule.steps;
  TrainingLog log(run_dir, {"loss", "feature_loss", "ce", "lr", "grad_norm", "held_out_acceptance", "held_out_top1"},
                  last_step, state);
  DrafterFitReport fit{state.values.count("held_out_acceptance") ? state.values["held_out_acceptance"] : 0,
                 state.values.count("held_out_top1") ? state.values["held_out_top1"] : 0};
  for (int step = state.step; step < last_step; ++step) {
    const double lr = params.schedule.lr_at(step);
    for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    const auto [rows, dropped] = corpus_batch(corpus, params.batch, params.caption_dropout, params.seed, step, 3);
    at::Tensor tokens;
    const at::Tensor h = teacher_features(target, corpus, rows, dropped, tokens);
    const auto len = tokens.size(1);
    at::Tensor inputs = h.narrow(1, 0, len - 1);
    const at::Tensor wanted = h.narrow(1, 1, len - 1);
    if (params.feature_noise > 0) {
      const at::Tensor rms = inputs.pow(2).mean().sqrt();
      const at::Tensor u = at::rand(inputs.sizes(), at::TensorOptions().dtype(at::kFloat).device(inputs.device()));
      inputs = inputs + (u - 0.5) * (params.feature_noise * std::sqrt(12.0)) * rms;  // std = noise × RMS
    }
    const at::Tensor predicted = drafter.forward_teacher(tokens.narrow(1, 0, len - 1), inputs);
    at::Tensor p;
    {
      at::NoGradGuard no_grad;
      p = at::softmax(target.head(wanted), -1);
    }
    const at::Tensor log_q = at::log_softmax(target.head(predicted), -1);
    const at::Tensor feature_loss = at::smooth_l1_loss(predicted, wanted, at::Reduction::None).mean(-1);
    at::Tensor soft_target = p;
    at::Tensor weight = at::ones_like(feature_loss);
    if (lisa) {
      at::NoGradGuard no_grad;
      if (params.lisa_smoothing) soft_target = at::matmul(p, locality.smoothing);
      if (params.lisa_weights) {
        const at::Tensor entropy = -(p * p.clamp_min(1e-12).log()).sum(-1) / log_vocab;
        const at::Tensor local_mass =
            (p * locality.within_radius.index_select(0, p.argmax(-1).reshape({-1})).reshape(p.sizes())).sum(-1);
        const at::Tensor raw = entropy * local_mass;
        weight = (raw / raw.mean().clamp_min(1e-12)).clamp(params.weight_min, params.weight_max);
      }
    }
    const at::Tensor ce = -(soft_target * log_q).sum(-1);
    const at::Tensor loss = (weight * (feature_loss + params.ce_weight * ce)).mean();
    optimizer.zero_grad();
    loss.backward();
    const double grad_norm = clip_gradients(parameters, params.grad_clip);
    optimizer.step();

    const bool checkpoint =
        (step + 1) % params.checkpoint_every == 0 || step + 1 == last_step || (stop && stop->load());
    if (checkpoint && held_out.size() > 0) fit = drafter_fit(drafter, held_out, params.held_out_images);
    if ((step + 1) % params.log_every == 0 || checkpoint) {
      const std::vector<double> values = {loss.item<double>(),
                                          feature_loss.mean().item<double>(),
                                          ce.mean().item<double>(),
                                          lr,
                                          grad_norm,
                                          fit.acceptance,
                                          fit.top1};
      log.row(step + 1, values);
      progress(log.progress(step, values));
    }
    if (checkpoint)
      save_checkpoint(run_dir, drafter.weights(), optimizer, log, step + 1,
                      {{"held_out_acceptance", fit.acceptance}, {"held_out_top1", fit.top1}}, state);
    if (stop && stop->load()) break;
  }
  return detached_copy(drafter.weights());
}

}  // namespace speculum
