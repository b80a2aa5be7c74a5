// MuLo-SD's training-free up-sampler U_r and down-sampler D_r (research/seed-methods.md §4.4): through
// pixels with the bundle's own tokenizer, which is fully convolutional and so encodes and decodes any
// grid. U_r decodes low-resolution codes, resizes the picture by r (bilinear) and encodes it again;
// D_r shrinks high-resolution pixels by r (area average) and encodes them.
#pragma once

#include <ATen/ATen.h>

#include "models/vq_model.h"

namespace speculum {

class PixelScaler {
 public:
  PixelScaler(const VqModel& tokenizer, int factor);
  int factor() const { return factor_; }

  // Pixels [1, 3, H, W] of codes [rows, cols] (int64; cells < 0 read as the tokenizer's neutral code).
  at::Tensor pixels(const at::Tensor& codes) const;
  // U_r: codes [r·rows, r·cols] of low-resolution codes [rows, cols]. With `context` (pixels of the high-
  // resolution image), its pixel rows above token row `context_rows` replace the up-scaled ones before
  // encoding, so the new rows continue the committed image without a seam.
  at::Tensor up(const at::Tensor& low_codes, const at::Tensor& context = {}, int context_rows = 0) const;
  // D_r: low-resolution codes [H/r/ds, W/r/ds] of high-resolution pixels [1, 3, H, W].
  at::Tensor down(const at::Tensor& high_pixels) const;

 private:
  const VqModel& tokenizer_;
  int factor_;
};

}  // namespace speculum
