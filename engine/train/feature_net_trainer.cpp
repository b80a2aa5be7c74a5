#include "train/feature_net_trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>
#include <torch/optim/adam.h>

#include "models/random_weights.h"

namespace speculum {
namespace {

struct LabelTensors {
  at::Tensor presence;  // [B, kPresence] float
  at::Tensor classes;   // [B, kClassGroups] long
};

LabelTensors label_tensors(const std::vector<data::Scene>& scenes) {
  const auto n = static_cast<std::int64_t>(scenes.size());
  LabelTensors out{at::zeros({n, FeatureNetLabels::kPresence}), at::zeros({n, FeatureNetLabels::kClassGroups}, at::kLong)};
  for (std::int64_t i = 0; i < n; ++i) {
    const FeatureNetLabels labels = feature_net_labels(scenes[static_cast<std::size_t>(i)]);
    for (int k = 0; k < FeatureNetLabels::kPresence; ++k) out.presence[i][k] = labels.presence[k];
    for (int g = 0; g < FeatureNetLabels::kClassGroups; ++g) out.classes[i][g] = labels.classes[g];
  }
  return out;
}

// Calls `each(group, logits of that group [B, size])` for every class group.
template <typename F>
void for_each_group(const at::Tensor& logits, F each) {
  std::int64_t offset = FeatureNetLabels::kPresence;
  for (int g = 0; g < FeatureNetLabels::kClassGroups; ++g) {
    each(g, logits.narrow(1, offset, FeatureNetLabels::kGroupSizes[g]));
    offset += FeatureNetLabels::kGroupSizes[g];
  }
}

// Half the batch through a 3x3 box blur, all of it with faint Gaussian noise (seeded per step).
at::Tensor augmented(const at::Tensor& images, std::uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const std::int64_t half = images.size(0) / 2;
  at::Tensor out = images.clone();
  if (half > 0)
    out.narrow(0, 0, half).copy_(at::avg_pool2d(images.narrow(0, 0, half), 3, 1, 1, /*ceil_mode=*/false, /*count_include_pad=*/false));
  return out + 0.03 * at::randn(out.sizes(), gen);
}

std::vector<at::Tensor> parameters(const TensorMap& weights) {
  std::vector<at::Tensor> out;
  for (const auto& [name, t] : weights) out.push_back(t);
  return out;
}

}  // namespace

at::Tensor feature_net_loss(const FeatureNet& net, const SceneBatch& batch) {
  const LabelTensors labels = label_tensors(batch.scenes);
  const at::Tensor logits = net.logits(net.features(batch.images));
  at::Tensor loss = at::binary_cross_entropy_with_logits(logits.narrow(1, 0, FeatureNetLabels::kPresence), labels.presence);
  for_each_group(logits, [&](int g, const at::Tensor& group) { loss = loss + at::cross_entropy_loss(group, labels.classes.select(1, g)); });
  return loss;
}

FeatureNetFit feature_net_fit(const FeatureNet& net, const SceneBatch& held_out) {
  c10::InferenceMode inference;
  const LabelTensors labels = label_tensors(held_out.scenes);
  const at::Tensor logits = net.logits(net.features(held_out.images));
  at::Tensor right = (logits.narrow(1, 0, FeatureNetLabels::kPresence) > 0).to(at::kFloat).eq(labels.presence);
  std::vector<at::Tensor> columns = {right};
  for_each_group(logits, [&](int g, const at::Tensor& group) { columns.push_back(group.argmax(1).eq(labels.classes.select(1, g)).unsqueeze(1)); });
  const at::Tensor all = at::cat(columns, 1).to(at::kFloat);
  return {all.mean().item<double>(), std::get<0>(all.min(1)).mean().item<double>()};
}

TensorMap train_feature_net(const FeatureNetTrainParams& params, const std::string& run_dir, const SceneBatches& batches,
                            const SceneBatch& held_out, const ProgressLine& progress, const std::atomic<bool>* stop) {
  const auto specs = feature_net_tensor_specs();
  CheckpointState state;
  TensorMap weights =
      start_or_resume(run_dir, specs, "feature network", [&] { return random_weights(specs, params.seed); }, progress, state);
  for (auto& [name, t] : weights) t.requires_grad_(true);
  FeatureNet net(weights);
  torch::optim::Adam optimizer(parameters(net.weights()), torch::optim::AdamOptions(params.schedule.peak_lr));
  if (state.step > 0) load_optimizer_state(optimizer, run_dir, at::kCPU);
  TrainingLog log(run_dir, {"loss", "lr", "held_out_accuracy", "held_out_exact"}, params.schedule.steps, state);
  FeatureNetFit fit{state.values.count("held_out_accuracy") ? state.values["held_out_accuracy"] : 0,
                    state.values.count("held_out_exact") ? state.values["held_out_exact"] : 0};
  for (int step = state.step; step < params.schedule.steps; ++step) {
    const double lr = params.schedule.lr_at(step);
    for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
    SceneBatch batch = batches(step);
    batch.images = augmented(batch.images, params.seed * 1000003 + static_cast<std::uint64_t>(step));
    const at::Tensor loss = feature_net_loss(net, batch);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    const bool checkpoint = (step + 1) % params.checkpoint_every == 0 || step + 1 == params.schedule.steps || (stop && stop->load());
    if (checkpoint) fit = feature_net_fit(net, held_out);
    if ((step + 1) % params.log_every == 0 || checkpoint) {
      const std::vector<double> values = {loss.item<double>(), lr, fit.accuracy, fit.exact};
      log.row(step + 1, values);
      progress(log.progress(step, values));
    }
    if (checkpoint)
      save_checkpoint(run_dir, net.weights(), optimizer, log, step + 1, {{"held_out_accuracy", fit.accuracy}, {"held_out_exact", fit.exact}}, state);
    if (stop && stop->load()) break;
  }
  return detached_copy(net.weights());
}

}  // namespace speculum
