// The VQ tokenizer: decode/encode shapes and ranges, the L2-normalised codebook, and previews of
// partial grids through the engine.
#include <c10/core/InferenceMode.h>

#include "models/random_weights.h"
#include "models/vq_model.h"
#include "speculum.h"
#include "test_helpers.h"

using namespace speculum;

namespace {

VqConfig small_vq() {
  VqConfig c;
  c.codebook_size = 64;
  c.codebook_dim = 8;
  c.z_channels = 32;
  c.ch = 16;
  c.ch_mult = {1, 2};
  c.num_res_blocks = 1;
  c.norm_groups = 8;
  return c;
}

}  // namespace

class TestVq : public QObject {
  Q_OBJECT
  c10::InferenceMode inference_;
  VqModel model_{small_vq(), random_weights(vq_tensor_specs(small_vq()), 3), at::kCPU};

 private Q_SLOTS:
  void decode_shapes_and_range() {
    const at::Tensor codes = at::randint(0, 64, {2, 4, 4}, at::kLong);
    const at::Tensor images = model_.decode(codes);
    QCOMPARE(images.sizes().vec(), (std::vector<std::int64_t>{2, 3, 8, 8}));
    QVERIFY(images.min().item<float>() >= -1.0f && images.max().item<float>() <= 1.0f);
    QVERIFY(images.std().item<float>() > 1e-3);  // not a constant image
    // Different codes give different pixels; equal codes equal pixels.
    QVERIFY(!at::equal(model_.decode(codes.narrow(0, 0, 1)), model_.decode((codes.narrow(0, 0, 1) + 1) % 64)));
    QVERIFY(at::allclose(model_.decode(codes.narrow(0, 1, 1)), images.narrow(0, 1, 1), 1e-5, 1e-5));
    EXPECT_ERROR(model_.decode(at::full({1, 2, 2}, 64, at::kLong)), "a code is outside [0, 64)");
    EXPECT_ERROR(model_.decode(at::zeros({4, 4}, at::kLong)), "expects codes [B, rows, cols]");
  }

  void encode_shapes_and_range() {
    const at::Tensor images = at::rand({3, 3, 8, 8}) * 2 - 1;
    const at::Tensor codes = model_.encode(images);
    QCOMPARE(codes.sizes().vec(), (std::vector<std::int64_t>{3, 4, 4}));
    QVERIFY(codes.min().item<std::int64_t>() >= 0 && codes.max().item<std::int64_t>() < 64);
    QVERIFY(at::equal(codes, model_.encode(images)));
    EXPECT_ERROR(model_.encode(at::zeros({1, 1, 8, 8})), "expects images [B, 3, H, W]");
  }

  void codebook_is_l2_normalised_and_neutral_code_is_central() {
    const at::Tensor book = model_.normalized_codebook();
    QVERIFY(at::allclose(book.norm(2, 1), at::ones({64}), 1e-5, 1e-5));
    const at::Tensor dist = (book - book.mean(0, true)).pow(2).sum(1);
    QCOMPARE(model_.neutral_code(), static_cast<int>(dist.argmin().item<std::int64_t>()));
  }

  void engine_preview_flags_unknown_cells() {
    EngineParams p;
    p.bundle_dir = test::bundles_dir() + "/tiny-text";
    p.device = "cpu";
    const auto engine = Engine::load(p);
    const int cells = engine->info().grid_rows * engine->info().grid_cols;
    std::vector<int> tokens(cells);
    for (int i = 0; i < cells; ++i) tokens[i] = (i * 37) % engine->info().vocab_size;
    const Image full = engine->decode(tokens);
    QCOMPARE(full.width, engine->info().image_size);
    QCOMPARE(full.rgb.size(), std::size_t(full.width * full.height * 3));
    QVERIFY(engine->preview(tokens).image.rgb == full.rgb);

    std::vector<int> partial = tokens;
    for (int i = cells / 2; i < cells; ++i) partial[i] = -1;
    const Preview preview = engine->preview(partial);
    QCOMPARE(preview.committed, cells / 2);
    QCOMPARE(preview.total, cells);
    for (int i = 0; i < cells; ++i) QCOMPARE(bool(preview.known[i]), i < cells / 2);
    QVERIFY(preview.image.rgb != full.rgb);
    EXPECT_ERROR(engine->decode(partial), "decode needs a complete grid");
    EXPECT_ERROR(engine->preview({1, 2, 3}), "expected 64 tokens, got 3");
  }

  // A code's patch is the centre of a 3x3 grid of it: one cell's size, the same for the same code, different
  // codes differ.
  void token_patches_show_each_code_alone() {
    EngineParams p;
    p.bundle_dir = test::bundles_dir() + "/tiny-text";
    p.device = "cpu";
    const auto engine = Engine::load(p);
    const ModelInfo& info = engine->info();
    const int side = info.image_size / info.grid_cols;
    const std::vector<Image> patches = engine->token_patches({3, 3, 17});
    QCOMPARE(patches.size(), std::size_t(3));
    for (const Image& patch : patches) {
      QCOMPARE(patch.width, side);
      QCOMPARE(patch.height, side);
      QCOMPARE(patch.rgb.size(), std::size_t(side * side * 3));
    }
    QVERIFY(patches[0].rgb == patches[1].rgb);
    QVERIFY(patches[0].rgb != patches[2].rgb);
    QVERIFY(engine->token_patches({}).empty());
    EXPECT_ERROR(engine->token_patches({info.vocab_size}), "outside the codebook");
    EXPECT_ERROR(engine->token_patches({-1}), "token -1 is outside the codebook");
  }
};

QTEST_GUILESS_MAIN(TestVq)
#include "test_vq.moc"
