// MuLo-SD's pixel up-sampler and down-sampler on the shipped tokenizer: how much of a scene survives the trip
// between the 16x16 and the 8x8 grid (docs/methods.md states these numbers).
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <QtTest>

#include "data/image_batches.h"
#include "decoding/pixel_scaler.h"
#include "io/bundle.h"
#include "models/vq_model.h"
#include "test_helpers.h"

using namespace speculum;

namespace {

double agreement(const at::Tensor& a, const at::Tensor& b) { return a.eq(b).to(at::kDouble).mean().item<double>(); }

double psnr(const at::Tensor& a, const at::Tensor& b) {  // images in [-1, 1]
  const double mse = (a - b).pow(2).mean().item<double>() / 4;
  return 10 * std::log10(1 / mse);
}

}  // namespace

class TestPixelScaler : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void round_trips_between_the_grids() {
    at::set_num_threads(1);
    c10::InferenceMode inference;
    const BundleManifest m = read_manifest(test::shipped_bundle_dir());
    const VqModel vq = VqModel::load(m.tokenizer, m.tokenizer_path(), at::kCPU);
    const PixelScaler scaler(vq, 2);
    double up_tokens = 0, up_psnr = 0, down_tokens = 0, tokenizer_psnr = 0;
    constexpr int kScenes = 24;
    const at::Tensor images = data::shapes_images(900000000, kScenes);  // held-out seeds
    for (int i = 0; i < kScenes; ++i) {
      const at::Tensor image = images.narrow(0, i, 1);
      const at::Tensor high = vq.encode(image)[0];                           // what the target models
      const at::Tensor low = vq.encode(at::avg_pool2d(image, {2, 2}))[0];    // what the drafter models
      const at::Tensor up = scaler.up(low);
      QCOMPARE(up.sizes(), high.sizes());
      QCOMPARE(scaler.down(scaler.pixels(high)).sizes(), low.sizes());
      up_tokens += agreement(up, high) / kScenes;
      up_psnr += psnr(scaler.pixels(up), image) / kScenes;
      tokenizer_psnr += psnr(scaler.pixels(high), image) / kScenes;
      down_tokens += agreement(scaler.down(scaler.pixels(high)), low) / kScenes;
    }
    qInfo("U(low) vs the scene's own 16x16 tokens: %.1f %% equal, %.1f dB (the tokenizer alone: %.1f dB); "
          "D(high) vs the scene's own 8x8 tokens: %.1f %% equal",
          100 * up_tokens, up_psnr, tokenizer_psnr, 100 * down_tokens);
    // Measured on the shipped tokenizer (24 held-out scenes): 19.7 % equal tokens and 26.2 dB up (bilinear; nearest
    // and bicubic resizing measured 20.6 % / 20.4 %, no better), 71.4 % down. Few up-sampled tokens are the scene's
    // own code, but most are near it, which is what pooling over the k nearest codes is for.
    QVERIFY(up_tokens > 0.15);
    QVERIFY(up_psnr > 24);
    QVERIFY(down_tokens > 0.6);
  }
};

QTEST_GUILESS_MAIN(TestPixelScaler)
#include "test_pixel_scaler.moc"
