// Images from the datasets as LibTorch batches for the trainers: [B, 3, H, W] float in [-1, 1].
#pragma once

#include <ATen/ATen.h>
#include <opencv2/core.hpp>

#include <cstdint>
#include <vector>

#include "models/vq_model.h"
#include "train/feature_net_trainer.h"
#include "train/vq_trainer.h"

namespace speculum::data {

at::Tensor image_to_tensor(const cv::Mat& rgb);  // CV_8UC3 RGB -> [3, H, W]
cv::Mat tensor_to_image(const at::Tensor& chw);   // [3, H, W] in [-1, 1] -> CV_8UC3 RGB

// The image as `tokenizer` gives it back: encoded to codes and decoded again.
cv::Mat reconstruct(const VqModel& tokenizer, const cv::Mat& rgb);

// Full 64x64 renders of scenes first_seed .. first_seed + count - 1.
at::Tensor shapes_images(std::uint64_t first_seed, int count);
// Full 64x64 renders of the scenes of these seeds, in order.
at::Tensor shapes_images(const std::vector<std::uint64_t>& seeds);

// Scenes first_seed .. first_seed + count - 1 with their renders (the feature network's held-out set).
SceneBatch shapes_scene_batch(std::uint64_t first_seed, int count);

// Step s: `batch` fresh whole scenes with their descriptions (seeds from `seed` and s).
SceneBatches shapes_scene_batches(std::uint64_t seed, int batch);

// Step s: `batch` fresh scenes (seeds from `seed` and s), each cropped to `crop` pixels at an offset
// aligned to the tokenizer's `align` (so code patterns line up with full-image tokens).
ImageBatches shapes_crop_batches(std::uint64_t seed, int batch, int crop, int align);

// The images of a dataset folder written by `speculum-cli data shapes|emoji` (captions.jsonl + PNGs),
// as [N, 3, H, W], with their captions; throws naming the folder or file when something is missing.
struct FolderDataset {
  at::Tensor images;
  std::vector<std::string> captions;
};
FolderDataset load_folder_dataset(const std::string& dir);

// Step s: `batch` random crops from `images` (deterministic per seed and step).
ImageBatches crop_batches(const at::Tensor& images, std::uint64_t seed, int batch, int crop, int align);

// Concatenates what the sources give for the same step.
ImageBatches mixed_batches(std::vector<ImageBatches> sources);

}  // namespace speculum::data
