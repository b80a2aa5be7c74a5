#include "train/vq_trainer.h"

#include <c10/core/InferenceMode.h>
#include <torch/optim/adam.h>
#include <torch/serialize.h>

#include <cmath>
#include <filesystem>

#include "error.h"
#include "models/random_weights.h"

namespace speculum {

VqLoss vq_loss(const VqModel& model, const at::Tensor& images, double commitment) {
  const at::Tensor latent = model.encode_latent(images);
  const at::Tensor z = latent / latent.norm(2, 1, true).clamp_min(1e-12);
  VqLoss loss;
  loss.codes = model.nearest_codes(latent.detach());
  const at::Tensor e = model.code_vectors(loss.codes);
  loss.codebook = (e - z.detach()).pow(2).mean();
  loss.commitment = commitment * (e.detach() - z).pow(2).mean();
  const at::Tensor quantized = z + (e - z).detach();  // straight-through
  const at::Tensor reconstruction = model.decode_latent(quantized);
  const at::Tensor diff = reconstruction - images;
  loss.reconstruction = diff.pow(2).mean() + 0.2 * diff.abs().mean();
  loss.total = loss.reconstruction + loss.codebook + loss.commitment;
  return loss;
}

double reconstruction_psnr(const VqModel& model, const at::Tensor& images) {
  c10::InferenceMode inference;
  double mse = 0;
  const auto n = images.size(0);
  for (std::int64_t i = 0; i < n; i += 64) {
    const at::Tensor batch = images.narrow(0, i, std::min<std::int64_t>(64, n - i));
    const at::Tensor out = model.decode(model.encode(batch));
    mse += ((out - batch) / 2).pow(2).sum().item<double>();
  }
  mse /= images.numel();
  return 10 * std::log10(1.0 / std::max(mse, 1e-12));
}

int codes_in_use(const VqModel& model, const at::Tensor& images) {
  c10::InferenceMode inference;
  at::Tensor used = at::zeros({model.config().codebook_size}, at::kBool);
  for (std::int64_t i = 0; i < images.size(0); i += 64)
    used.index_fill_(0, model.encode(images.narrow(0, i, std::min<std::int64_t>(64, images.size(0) - i))).reshape({-1}).to(at::kCPU), true);
  return static_cast<int>(used.sum().item<std::int64_t>());
}

namespace {

std::vector<at::Tensor> parameters(const TensorMap& weights) {
  std::vector<at::Tensor> out;
  for (const auto& [name, t] : weights) out.push_back(t);
  return out;
}

// Re-seeds codes unused since the last reset with (noisy) encoder outputs of the current batch.
int reset_dead_codes(VqModel& model, at::Tensor& usage, const at::Tensor& images, std::uint64_t seed) {
  at::NoGradGuard no_grad;
  const at::Tensor dead = (usage == 0).nonzero().reshape({-1});
  usage.zero_();
  const auto count = dead.numel();
  if (count == 0) return 0;
  const at::Tensor latent = model.encode_latent(images);
  const at::Tensor z = latent.permute({0, 2, 3, 1}).reshape({-1, model.config().codebook_dim});
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const at::Tensor pick = at::randint(z.size(0), {count}, gen, at::kLong);
  const at::Tensor fresh = z.index_select(0, pick) + 0.01 * at::randn({count, z.size(1)}, gen);
  model.weights().at("quantize.embedding.weight").index_copy_(0, dead, fresh);  // Tensor handles: in-place on the shared leaf
  return static_cast<int>(count);
}

}  // namespace

TensorMap train_vq(const VqConfig& config, const VqTrainParams& params, const std::string& run_dir,
                   const ImageBatches& batches, const std::vector<HeldOutImages>& held_out,
                   const ProgressLine& progress, const std::atomic<bool>* stop) {
  const std::string ckpt = checkpoint_dir(run_dir);
  const auto specs = vq_tensor_specs(config);
  CheckpointState state;
  TensorMap weights = start_or_resume(run_dir, specs, "VQ", [&] { return random_weights(specs, params.seed); }, progress, state);
  const bool resume = state.step > 0;
  for (auto& [name, t] : weights) t.requires_grad_(true);
  VqModel model(config, weights, at::kCPU);

  torch::optim::Adam optimizer(parameters(model.weights()), torch::optim::AdamOptions(params.schedule.peak_lr).betas({0.9, 0.95}));
  if (resume) load_optimizer_state(optimizer, run_dir, at::kCPU);

  std::vector<std::string> columns = {"loss", "recon", "codebook", "commit", "lr", "codes_used", "dead_reset"};
  for (const auto& h : held_out) columns.push_back("psnr_" + h.name);
  TrainingLog log(run_dir, columns, params.schedule.steps, state);
  at::Tensor usage = at::zeros({config.codebook_size}, at::kLong);
  int last_reset = 0;
  std::vector<double> held_out_psnr(held_out.size(), 0);

  auto save = [&](int step) {
    save_tensors(ckpt + "/weights.safetensors", model.weights());
    save_optimizer_state(optimizer, run_dir);
    state.step = step;
    for (std::size_t i = 0; i < held_out.size(); ++i) state.values["psnr_" + held_out[i].name] = held_out_psnr[i];
    state.values[TrainingLog::kTrainingSecondsKey] = log.training_seconds();
    write_checkpoint_state(run_dir, state);
  };

  for (int step = state.step; step < params.schedule.steps; ++step) {
    const double lr = params.schedule.lr_at(step);
    for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
    const at::Tensor images = batches(step);
    const VqLoss loss = vq_loss(model, images, params.commitment);
    optimizer.zero_grad();
    loss.total.backward();
    optimizer.step();
    usage.index_add_(0, loss.codes.reshape({-1}), at::ones({loss.codes.numel()}, at::kLong));

    const double codes_used = double((usage > 0).sum().item<std::int64_t>());  // since the last reset
    if ((step + 1) % params.dead_code_every == 0) last_reset = reset_dead_codes(model, usage, images, params.seed + step);
    const bool checkpoint = (step + 1) % params.checkpoint_every == 0 || step + 1 == params.schedule.steps ||
                            (stop && stop->load());
    if (checkpoint)
      for (std::size_t i = 0; i < held_out.size(); ++i) held_out_psnr[i] = reconstruction_psnr(model, held_out[i].images);
    if ((step + 1) % params.log_every == 0 || checkpoint) {
      std::vector<double> values = {loss.total.item<double>(), loss.reconstruction.item<double>(),
                                    loss.codebook.item<double>(), loss.commitment.item<double>(), lr, codes_used,
                                    double(last_reset)};
      values.insert(values.end(), held_out_psnr.begin(), held_out_psnr.end());
      log.row(step + 1, values);
      progress(log.progress(step, values));
    }
    if (checkpoint) save(step + 1);
    if (stop && stop->load()) break;
  }
  TensorMap out;
  for (const auto& [name, t] : model.weights()) out[name] = t.detach().clone();
  return out;
}

}  // namespace speculum
