#include "decoding/pixel_scaler.h"

namespace speculum {

PixelScaler::PixelScaler(const VqModel& tokenizer, int factor) : tokenizer_(tokenizer), factor_(factor) {}

at::Tensor PixelScaler::pixels(const at::Tensor& codes) const {
  const at::Tensor known = codes.to(at::kLong);
  const at::Tensor filled = at::where(known >= 0, known, at::full_like(known, tokenizer_.neutral_code()));
  return tokenizer_.decode(filled.unsqueeze(0));
}

at::Tensor PixelScaler::up(const at::Tensor& low_codes, const at::Tensor& context, int context_rows) const {
  const at::Tensor low = pixels(low_codes);
  at::Tensor high = at::upsample_bilinear2d(low, {low.size(2) * factor_, low.size(3) * factor_}, /*align_corners=*/false);
  if (context.defined() && context_rows > 0) {
    const int64_t rows = static_cast<int64_t>(context_rows) * tokenizer_.config().downsample_factor();
    high.narrow(2, 0, rows).copy_(context.narrow(2, 0, rows));
  }
  return tokenizer_.encode(high.clamp(-1, 1))[0];
}

at::Tensor PixelScaler::down(const at::Tensor& high_pixels) const {
  return tokenizer_.encode(at::avg_pool2d(high_pixels, {factor_, factor_}))[0];
}

}  // namespace speculum
