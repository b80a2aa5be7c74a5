// Trains the LlamaGen VQ tokenizer: L2 + L1 reconstruction, codebook and commitment losses on
// L2-normalised codes with a straight-through estimator, and dead-code reset (unused codes are
// re-seeded from encoder outputs). Resumes from `<run_dir>/checkpoint`.
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <string>
#include <vector>

#include "models/tensor_io.h"
#include "models/vq_model.h"
#include "train/training_run.h"

namespace speculum {

using ImageBatches = std::function<at::Tensor(int step)>;  // [B, 3, H, W] in [-1, 1], deterministic per step

struct HeldOutImages {
  std::string name;   // "shapes", "emoji"
  at::Tensor images;  // [N, 3, H, W] in [-1, 1]
};

// Reconstruction PSNR (dB, on [0, 1] pixels) and the number of distinct codes the images use.
double reconstruction_psnr(const VqModel& model, const at::Tensor& images);
int codes_in_use(const VqModel& model, const at::Tensor& images);

// One optimisation step's loss terms on a batch (exposed for the "a step lowers the loss" test).
struct VqLoss {
  at::Tensor total, reconstruction, codebook, commitment;
  at::Tensor codes;
};
VqLoss vq_loss(const VqModel& model, const at::Tensor& images, double commitment);

// Returns the trained weights; `stop` (may be null) ends training early after a checkpoint.
TensorMap train_vq(const VqConfig& config, const VqTrainParams& params, const std::string& run_dir,
                   const ImageBatches& batches, const std::vector<HeldOutImages>& held_out,
                   const ProgressLine& progress, const std::atomic<bool>* stop = nullptr);

}  // namespace speculum
