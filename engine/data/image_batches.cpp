#include "data/image_batches.h"

#include <c10/core/InferenceMode.h>

#include <sstream>
#include <nlohmann/json.hpp>

#include "data/shapes_render.h"
#include "error.h"
#include "eval/prompt_checker.h"
#include "io/json_fields.h"
#include <cstring>

#include "io/input_file.h"
#include "io/limits.h"
#include "sampling/counter_rng.h"

namespace speculum::data {

at::Tensor image_to_tensor(const cv::Mat& rgb) {
  const at::Tensor hwc = at::from_blob(const_cast<std::uint8_t*>(rgb.ptr<std::uint8_t>()), {rgb.rows, rgb.cols, 3},
                                       {static_cast<std::int64_t>(rgb.step[0]), 3, 1}, at::kByte);
  return hwc.permute({2, 0, 1}).to(at::kFloat).div(127.5).sub(1.0).contiguous();
}

cv::Mat tensor_to_image(const at::Tensor& chw) {
  const at::Tensor hwc = ((chw.detach().to(at::kCPU, at::kFloat).clamp(-1, 1) + 1) * 127.5).round().to(at::kByte).permute({1, 2, 0}).contiguous();
  cv::Mat image(static_cast<int>(hwc.size(0)), static_cast<int>(hwc.size(1)), CV_8UC3);
  std::memcpy(image.data, hwc.data_ptr(), hwc.numel());
  return image;
}

cv::Mat reconstruct(const VqModel& tokenizer, const cv::Mat& rgb) {
  c10::InferenceMode inference;
  return tensor_to_image(tokenizer.decode(tokenizer.encode(image_to_tensor(rgb).unsqueeze(0)))[0]);
}

at::Tensor shapes_images(std::uint64_t first_seed, int count) {
  std::vector<std::uint64_t> seeds(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) seeds[i] = first_seed + i;
  return shapes_images(seeds);
}

at::Tensor shapes_images(const std::vector<std::uint64_t>& seeds) {
  std::vector<at::Tensor> images;
  for (std::uint64_t seed : seeds) images.push_back(image_to_tensor(render_scene(sample_scene(seed))));
  return at::stack(images);
}

ImageBatches shapes_crop_batches(std::uint64_t seed, int batch, int crop, int align) {
  return [=](int step) {
    std::vector<at::Tensor> images;
    const int positions = (kShapesImageSize - crop) / align + 1;
    for (int i = 0; i < batch; ++i) {
      const std::uint64_t scene_seed = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(step) * 4096 + i));
      const at::Tensor full = image_to_tensor(render_scene(sample_scene(scene_seed)));
      const int y = align * static_cast<int>(counter_uniform(scene_seed, RngStream::Data, 9, 0) * positions);
      const int x = align * static_cast<int>(counter_uniform(scene_seed, RngStream::Data, 9, 1) * positions);
      images.push_back(full.narrow(1, y, crop).narrow(2, x, crop));
    }
    return at::stack(images);
  };
}

namespace {

// The scenes of `seed_of(0 .. count - 1)` with their renders.
template <typename SeedOf>
SceneBatch scene_batch(int count, SeedOf seed_of) {
  SceneBatch out;
  std::vector<at::Tensor> images;
  for (int i = 0; i < count; ++i) {
    out.scenes.push_back(sample_scene(seed_of(i)));
    images.push_back(image_to_tensor(render_scene(out.scenes.back())));
  }
  out.images = at::stack(images);
  return out;
}

}  // namespace

SceneBatch shapes_scene_batch(std::uint64_t first_seed, int count) {
  return scene_batch(count, [first_seed](int i) { return first_seed + static_cast<std::uint64_t>(i); });
}

SceneBatches shapes_scene_batches(std::uint64_t seed, int batch) {
  return [=](int step) {
    return scene_batch(batch, [seed, step](int i) { return splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(step) * 4096 + i)); });
  };
}

FolderDataset load_folder_dataset(const std::string& dir) {
  const std::string index = dir + "/captions.jsonl";
  const std::string hint = " (make it with speculum-cli data shapes|emoji --out " + dir + ")";
  std::istringstream in(read_input_file(index, limits::kMaxSmallTextBytes, "caption index", hint.c_str()));
  FolderDataset dataset;
  std::vector<at::Tensor> images;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty()) continue;
    const nlohmann::json entry = parse_untrusted_json(line, index + ":" + std::to_string(number), 4);
    const JsonFields fields(entry, index + ":" + std::to_string(number));
    images.push_back(image_to_tensor(eval::read_rgb_image(dir + "/" + fields.string("file"))));
    dataset.captions.push_back(fields.string("caption"));
  }
  if (images.empty()) throw Error("'" + index + "' lists no images");
  dataset.images = at::stack(images);
  return dataset;
}

ImageBatches crop_batches(const at::Tensor& images, std::uint64_t seed, int batch, int crop, int align) {
  return [=](int step) {
    std::vector<at::Tensor> out;
    const auto n = images.size(0);
    const int ys = (static_cast<int>(images.size(2)) - crop) / align + 1, xs = (static_cast<int>(images.size(3)) - crop) / align + 1;
    for (int i = 0; i < batch; ++i) {
      const auto pick = std::min<std::int64_t>(n - 1, static_cast<std::int64_t>(counter_uniform(seed, RngStream::Data, step, 3 * i) * n));
      const int y = align * static_cast<int>(counter_uniform(seed, RngStream::Data, step, 3 * i + 1) * ys);
      const int x = align * static_cast<int>(counter_uniform(seed, RngStream::Data, step, 3 * i + 2) * xs);
      out.push_back(images[pick].narrow(1, y, crop).narrow(2, x, crop));
    }
    return at::stack(out);
  };
}

ImageBatches mixed_batches(std::vector<ImageBatches> sources) {
  return [sources = std::move(sources)](int step) {
    std::vector<at::Tensor> parts;
    for (const auto& source : sources) parts.push_back(source(step));
    return at::cat(parts);
  };
}

}  // namespace speculum::data
