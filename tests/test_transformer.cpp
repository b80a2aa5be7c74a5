// The LlamaGen transformer: 2D RoPE against hand-computed values; the KV cache (incremental, chunked,
// tree-masked, truncated and compacted) against full forwards of the same tokens.
#include <c10/core/InferenceMode.h>

#include <cmath>

#include "models/decoder_layer_step.h"
#include "models/random_weights.h"
#include "models/rope.h"
#include "models/transformer.h"
#include "small_gpt_config.h"
#include "test_helpers.h"

using namespace speculum;

namespace {

// Float32 logits of identical computations through different cache paths agree to this.
constexpr double kTolerance = 1e-4;

// A text model that reads word order (a caption encoder) and knows its grid cells (position embeddings).
GptConfig contextual_text_config() {
  GptConfig c = small_gpt_config(ConditionKind::Text);
  c.caption_dim = 32;
  c.text_encoder_layers = 1;
  c.image_positions = true;
  return c;
}

Transformer make_model(const GptConfig& c, WeightFormat format = WeightFormat::F32) {
  return Transformer(c, random_weights(gpt_tensor_specs(c), 42), at::kCPU, format);
}
Transformer make_model(ConditionKind kind = ConditionKind::Class) { return make_model(small_gpt_config(kind)); }

// Logits for the second image token after the caption `words` and a first token 3 (conditional row). (The
// first token's logits come from the last word's own slot, which sees that word directly.)
at::Tensor second_token_logits(const Transformer& m, const std::vector<int>& words) {
  KVCache cache = m.make_cache(1, 0);
  const ConditionPrefix p = m.text_prefix(words, 1);
  ForwardInput prefix;
  prefix.embeddings = p.embeddings;
  prefix.positions = m.prefix_positions();
  prefix.attendable = p.attendable;
  m.forward(prefix, cache);
  ForwardInput token;
  token.tokens = at::tensor({3}, at::kLong);
  token.positions = {m.config().cls_token_num};
  return m.forward(token, cache).logits;
}

ForwardInput image_tokens(const std::vector<std::int64_t>& tokens, const std::vector<std::int64_t>& rasters, int cls) {
  ForwardInput in;
  in.tokens = at::tensor(tokens, at::kLong);
  for (auto r : rasters) in.positions.push_back(cls + r);
  return in;
}

ForwardInput prefix_of(const Transformer& m, const ConditionPrefix& p) {
  ForwardInput in;
  in.embeddings = p.embeddings;
  in.positions = m.prefix_positions();
  in.attendable = p.attendable;
  return in;
}

double max_diff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace

class TestTransformer : public QObject {
  Q_OBJECT
  c10::InferenceMode inference_;

 private Q_SLOTS:
  void rope_table_matches_hand_computed_values() {
    // head_dim 8: hd/4 = 2 frequencies per axis, 1 / base^(0/4) = 1 and 1 / base^(2/4) = 0.1 for base 100.
    const at::Tensor t = rope_table_2d(3, 3, 8, 100.0, 2);
    QCOMPARE(t.sizes().vec(), (std::vector<std::int64_t>{2 + 9, 4, 2}));
    QCOMPARE(t.narrow(0, 0, 2).abs().sum().item<float>(), 0.0f);  // condition rows are all zero
    const double freqs[2] = {1.0, 0.1};
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) {
        const at::Tensor row = t[2 + r * 3 + c];
        for (int i = 0; i < 2; ++i) {
          QVERIFY(std::abs(row[i][0].item<double>() - std::cos(r * freqs[i])) < 1e-6);      // row half
          QVERIFY(std::abs(row[i][1].item<double>() - std::sin(r * freqs[i])) < 1e-6);
          QVERIFY(std::abs(row[2 + i][0].item<double>() - std::cos(c * freqs[i])) < 1e-6);  // column half
          QVERIFY(std::abs(row[2 + i][1].item<double>() - std::sin(c * freqs[i])) < 1e-6);
        }
      }
    }
  }

  void rope_rotates_interleaved_pairs() {
    const at::Tensor table = rope_table_2d(3, 3, 8, 100.0, 2);
    const at::Tensor x = at::arange(1, 9, at::kFloat).reshape({1, 1, 1, 8});  // pairs (1,2) (3,4) (5,6) (7,8)
    const int r = 2, c = 1;
    const at::Tensor y = apply_rope(x, table.narrow(0, 2 + r * 3 + c, 1)).reshape({8});
    const double angles[4] = {r * 1.0, r * 0.1, c * 1.0, c * 0.1};
    for (int i = 0; i < 4; ++i) {
      const double x0 = 2 * i + 1, x1 = 2 * i + 2, a = angles[i];
      QVERIFY(std::abs(y[2 * i].item<double>() - (x0 * std::cos(a) - x1 * std::sin(a))) < 1e-5);
      QVERIFY(std::abs(y[2 * i + 1].item<double>() - (x1 * std::cos(a) + x0 * std::sin(a))) < 1e-5);
    }
    // At a condition position q and k vanish, exactly as in LlamaGen.
    QCOMPARE(apply_rope(x, table.narrow(0, 0, 1)).abs().sum().item<float>(), 0.0f);
  }

  void incremental_equals_full_forward_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("chunk");
    QTest::newRow("cond only, 1 token per step") << 1 << 1;
    QTest::newRow("cfg rows, 1 token per step") << 2 << 1;
    QTest::newRow("cfg rows, chunks of 4") << 2 << 4;
  }
  void incremental_equals_full_forward() {
    QFETCH(int, rows);
    QFETCH(int, chunk);
    const Transformer m = make_model();
    const int cls = m.config().cls_token_num, n = 15;
    std::vector<std::int64_t> tokens, rasters;
    for (int i = 0; i < n; ++i) {
      tokens.push_back((i * 7 + 3) % 32);
      rasters.push_back(i);
    }
    KVCache full = m.make_cache(rows, 0);
    const at::Tensor full_prefix = m.forward(prefix_of(m, m.class_prefix(2, rows)), full).logits;
    const at::Tensor full_logits = m.forward(image_tokens(tokens, rasters, cls), full).logits;

    KVCache inc = m.make_cache(rows, 0);
    const at::Tensor inc_prefix = m.forward(prefix_of(m, m.class_prefix(2, rows)), inc).logits;
    QVERIFY(max_diff(full_prefix, inc_prefix) < kTolerance);
    for (int i = 0; i < n; i += chunk) {
      const int len = std::min(chunk, n - i);
      const std::vector<std::int64_t> t(tokens.begin() + i, tokens.begin() + i + len);
      const std::vector<std::int64_t> r(rasters.begin() + i, rasters.begin() + i + len);
      const at::Tensor step = m.forward(image_tokens(t, r, cls), inc).logits;
      QVERIFY2(max_diff(step, full_logits.narrow(1, i, len)) < kTolerance, qPrintable(QString("at token %1").arg(i)));
    }
    QCOMPARE(inc.length(), full.length());
    if (rows == 2)  // the null-class row really differs
      QVERIFY(max_diff(full_logits[0], full_logits[1]) > 1e-3);
  }

  // The one-pass layer of a decode step (raw buffers) against LibTorch's operators on the same inputs: a
  // [1, 1, 1, keys] bias broadcasts alike but sends decoder_layer down LibTorch's path.
  void one_pass_step_equals_libtorch_layer_data() {
    QTest::addColumn<bool>("cached");
    QTest::addColumn<int>("format");
    QTest::addColumn<bool>("half_cache");
    QTest::newRow("over a cache") << true << int(WeightFormat::F32) << false;
    QTest::newRow("over a cache, q8") << true << int(WeightFormat::Q8) << false;
    QTest::newRow("over an f16 cache, f16") << true << int(WeightFormat::F16) << true;
    QTest::newRow("without a cache") << false << int(WeightFormat::F32) << false;
  }
  void one_pass_step_equals_libtorch_layer() {
    QFETCH(bool, cached);
    QFETCH(int, format);
    QFETCH(bool, half_cache);
    const GptConfig c = small_gpt_config();
    const int rows = 2, heads = c.n_head, hd = c.head_dim(), earlier = cached ? 5 : 0, keys = earlier + 1;
    const DecoderLayer layer =
        decoder_layer_weights(random_weights(gpt_tensor_specs(c), 7), "layers.1.", "test", true, WeightFormat(format));
    at::manual_seed(3);
    const at::Tensor x = at::randn({rows, 1, c.dim});
    const at::Tensor rope = rope_table_2d(c.grid_rows, c.grid_cols, hd, c.rope_base, 1).narrow(0, 4, 1);
    at::Tensor bias = at::zeros({1, keys});
    if (cached) bias[0][1] = kMaskedOut;  // a padded slot
    const auto options = at::TensorOptions().dtype(half_cache ? at::kHalf : at::kFloat);
    KVCache one_pass(c.n_layer, rows, heads, hd, 12, options), operators(c.n_layer, rows, heads, hd, 12, options);
    if (cached) {
      const at::Tensor k = at::randn({rows, heads, earlier, hd}), v = at::randn({rows, heads, earlier, hd});
      for (KVCache* cache : {&one_pass, &operators}) {
        cache->append_slots(std::vector<std::int64_t>(earlier, 0), {});
        cache->write(1, 0, k, v);
        cache->append_slots({0}, {});
      }
    }
    const at::Tensor broadcast = bias.view({1, 1, 1, keys});
    QVERIFY(decoder_layer_step_applies(x, layer, rope, bias, cached ? &one_pass : nullptr, earlier));
    QVERIFY(!decoder_layer_step_applies(x, layer, rope, broadcast, cached ? &operators : nullptr, earlier));
    QVERIFY(!decoder_layer_step_applies(at::randn({rows, 3, c.dim}), layer, rope, bias, nullptr, 0));  // 3 new tokens
    const at::Tensor fast = decoder_layer_step(x, layer, heads, c.norm_eps, rope, bias, cached ? &one_pass : nullptr, 1, earlier);
    const at::Tensor reference = decoder_layer(x, layer, heads, c.norm_eps, rope, broadcast, cached ? &operators : nullptr, 1, earlier);
    QCOMPARE(fast.sizes().vec(), reference.sizes().vec());
    QVERIFY2(max_diff(fast, reference) < 1e-5, qPrintable(QString::number(max_diff(fast, reference))));
    QVERIFY(max_diff(fast[0], fast[1]) > 1e-3);  // the rows are really separate
    if (cached) {
      QCOMPARE(max_diff(one_pass.keys(1, keys), operators.keys(1, keys)), 0.0);
      QCOMPARE(max_diff(one_pass.values(1, keys), operators.values(1, keys)), 0.0);
    }
  }

  // Over float32 caches and the float16 caches of a 16-bit model: index_select and copy move half slots alike.
  void tree_mask_then_compact_equals_direct_decoding_data() {
    QTest::addColumn<int>("format");
    QTest::newRow("f32") << int(WeightFormat::F32);
    QTest::newRow("f16, f16 cache") << int(WeightFormat::F16);
  }
  void tree_mask_then_compact_equals_direct_decoding() {
    QFETCH(int, format);
    const Transformer m = make_model(small_gpt_config(), WeightFormat(format));
    QCOMPARE(m.make_cache(1, 0).half_precision(), WeightFormat(format) != WeightFormat::F32);
    const int cls = m.config().cls_token_num;
    const std::int64_t x0 = 4, y0 = 9, x1 = 17, z = 23, w = 30;

    // A tree after the prefix: x0 and y0 are alternatives for raster 0, x1 (raster 1) is x0's child.
    KVCache tree = m.make_cache(2, 8);
    m.forward(prefix_of(m, m.class_prefix(1, 2)), tree);
    const int base = tree.length();
    ForwardInput in = image_tokens({x0, y0, x1}, {0, 0, 1}, cls);
    in.attend = at::tensor({1, 0, 0, 0, 1, 0, 1, 0, 1}, at::kInt).reshape({3, 3}).to(at::kBool);
    const at::Tensor tree_logits = m.forward(in, tree).logits;

    KVCache direct = m.make_cache(2, 0);
    m.forward(prefix_of(m, m.class_prefix(1, 2)), direct);
    const at::Tensor path_logits = m.forward(image_tokens({x0, x1, z}, {0, 1, 2}, cls), direct).logits;
    QVERIFY(max_diff(tree_logits.narrow(1, 0, 1), path_logits.narrow(1, 0, 1)) < kTolerance);  // x0
    QVERIFY(max_diff(tree_logits.narrow(1, 2, 1), path_logits.narrow(1, 1, 1)) < kTolerance);  // x1 under x0

    // Accept x0 -> x1: compact their slots, then continue with z.
    tree.compact(base, {base + 0, base + 2});
    QCOMPARE(tree.length(), base + 2);
    QCOMPARE(tree.positions().back(), std::int64_t(cls + 1));
    const at::Tensor after = m.forward(image_tokens({z}, {2}, cls), tree).logits;
    QVERIFY(max_diff(after, path_logits.narrow(1, 2, 1)) < kTolerance);

    // Accept only y0 instead (a fresh tree): compact its slot, continue with w at raster 1.
    KVCache tree2 = m.make_cache(2, 8);
    m.forward(prefix_of(m, m.class_prefix(1, 2)), tree2);
    m.forward(in, tree2);
    tree2.compact(base, {base + 1});
    const at::Tensor after2 = m.forward(image_tokens({w}, {1}, cls), tree2).logits;
    KVCache direct2 = m.make_cache(2, 0);
    m.forward(prefix_of(m, m.class_prefix(1, 2)), direct2);
    const at::Tensor ref2 = m.forward(image_tokens({y0, w}, {0, 1}, cls), direct2).logits;
    QVERIFY(max_diff(after2, ref2.narrow(1, 1, 1)) < kTolerance);
  }

  void truncate_then_continue_equals_direct() {
    const Transformer m = make_model();
    const int cls = m.config().cls_token_num;
    KVCache cache = m.make_cache(1, 4);
    m.forward(prefix_of(m, m.class_prefix(0, 1)), cache);
    const int base = cache.length();
    m.forward(image_tokens({1, 2, 3}, {0, 1, 2}, cls), cache);  // drafts; only the first is accepted
    cache.truncate(base + 1);
    const at::Tensor next = m.forward(image_tokens({5}, {1}, cls), cache).logits;
    KVCache direct = m.make_cache(1, 0);
    m.forward(prefix_of(m, m.class_prefix(0, 1)), direct);
    const at::Tensor ref = m.forward(image_tokens({1, 5}, {0, 1}, cls), direct).logits;
    QVERIFY(max_diff(next, ref.narrow(1, 1, 1)) < kTolerance);
  }

  void cache_errors_are_reported_and_roll_back() {
    const Transformer m = make_model();
    KVCache cache = m.make_cache(1, 0);
    m.forward(prefix_of(m, m.class_prefix(0, 1)), cache);
    const int length = cache.length();
    ForwardInput bad = image_tokens({1, 2}, {0, 1}, 1);
    bad.attend = at::ones({3, 3}, at::kBool);
    EXPECT_ERROR(m.forward(bad, cache), "attend mask must be [2, M] with 2 <= M <= ");
    QCOMPARE(cache.length(), length);  // the failed pass left no slots behind
    EXPECT_ERROR(m.forward(image_tokens({1}, {99}, 1), cache), "position 100 outside the model's 17 positions");
    EXPECT_ERROR(cache.compact(length, {0}), "slot 0 outside");
    EXPECT_ERROR(cache.truncate(length + 1), "truncate to");
    std::vector<std::int64_t> many(40, 0), rasters(40);
    for (int i = 0; i < 40; ++i) rasters[i] = i % 16;
    EXPECT_ERROR(m.forward(image_tokens(many, rasters, 1), cache), "KV cache overflow");
    EXPECT_ERROR(m.class_prefix(5, 1), "class 5 is outside [0, 5)");
  }

  void teacher_forcing_matches_cached_decoding_data() {
    QTest::addColumn<bool>("contextual");
    QTest::newRow("word embeddings") << false;
    QTest::newRow("caption encoder, cell positions") << true;
  }

  void teacher_forcing_matches_cached_decoding() {
    QFETCH(bool, contextual);
    const Transformer m = make_model(contextual ? contextual_text_config() : small_gpt_config(ConditionKind::Text));
    const int cls = m.config().cls_token_num;
    const std::vector<std::vector<int>> words = {{3, 7}, {1, 2, 4, 9}};
    const at::Tensor tokens = at::tensor({5, 1, 30, 2, 8, 8, 0, 17, 4, 4, 4, 31}, at::kLong).reshape({2, 6});
    const auto [prefix, attendable] = m.caption_batch(words, {false, true});
    const at::Tensor teacher = m.forward_teacher(prefix, attendable, tokens);
    QCOMPARE(teacher.sizes().vec(), (std::vector<std::int64_t>{2, 6, 32}));
    for (int b = 0; b < 2; ++b) {
      // Row 0 is conditional; row 1 is the null caption under row 1's padding, i.e. the CFG uncond row.
      const ConditionPrefix p = m.text_prefix(words[b], 2);
      KVCache cache = m.make_cache(2, 0);
      const at::Tensor first = m.forward(prefix_of(m, p), cache).logits.narrow(1, cls - 1, 1);
      std::vector<std::int64_t> t(tokens[b].data_ptr<std::int64_t>(), tokens[b].data_ptr<std::int64_t>() + 5);
      const at::Tensor rest = m.forward(image_tokens(t, {0, 1, 2, 3, 4}, cls), cache).logits;
      const at::Tensor cached = at::cat({first, rest}, 1)[b];  // row b of the CFG pair
      QVERIFY2(max_diff(teacher[b], cached) < kTolerance, qPrintable(QString("row %1").arg(b)));
    }
  }

  void text_prefix_pads_on_the_left_and_masks_padding() {
    const Transformer m = make_model(ConditionKind::Text);
    const ConditionPrefix p = m.text_prefix({3, 7}, 2);
    QCOMPARE(p.embeddings.sizes().vec(), (std::vector<std::int64_t>{2, 6, 64}));
    QCOMPARE(p.attendable, (std::vector<char>{0, 0, 0, 0, 1, 1}));
    // Padded slots are invisible: logits do not depend on what sits in them.
    ConditionPrefix noisy = p;
    noisy.embeddings = p.embeddings.clone();
    noisy.embeddings.narrow(1, 0, 4).normal_();
    KVCache a = m.make_cache(2, 0), b = m.make_cache(2, 0);
    const at::Tensor la = m.forward(prefix_of(m, p), a).logits.narrow(1, 5, 1);
    const at::Tensor lb = m.forward(prefix_of(m, noisy), b).logits.narrow(1, 5, 1);
    QVERIFY(max_diff(la, lb) < kTolerance);
    // ... but the words themselves matter.
    KVCache c = m.make_cache(2, 0);
    const at::Tensor lc = m.forward(prefix_of(m, m.text_prefix({3, 8}, 2)), c).logits.narrow(1, 5, 1);
    QVERIFY(max_diff(la[0], lc[0]) > 1e-3);
    EXPECT_ERROR(m.text_prefix({1, 1, 1, 1, 1, 1, 1}, 1), "the prompt has 7 words; this model reads at most 6");
  }

  void word_order_reaches_the_image_only_through_the_caption_encoder() {
    // LlamaGen's prefix queries and keys are zero (all-zero RoPE rows): every slot weighs the words alike.
    // Through one block, bare word embeddings reach the image as a bag (deeper blocks see only the
    // running means that causal uniform attention makes of them).
    GptConfig one_block = small_gpt_config(ConditionKind::Text);
    one_block.n_layer = 1;
    const Transformer bag = make_model(one_block);
    QVERIFY(max_diff(second_token_logits(bag, {2, 5, 7}), second_token_logits(bag, {7, 5, 2})) < kTolerance);
    const Transformer contextual = make_model(contextual_text_config());
    QVERIFY(max_diff(second_token_logits(contextual, {2, 5, 7}), second_token_logits(contextual, {7, 5, 2})) > 1e-3);
    // Word order counts from the first word, not from the padded slot: a caption reads the same at any length.
    QVERIFY(max_diff(second_token_logits(contextual, {2, 5}), second_token_logits(contextual, {5, 2})) > 1e-3);
  }

  void cell_positions_tell_apart_equal_neighbourhoods() {
    // The same token after the same prefix at two different cells: RoPE alone cannot tell row 0's
    // first cell from any other first token, the position embedding can.
    const Transformer m = make_model(contextual_text_config());
    const int cls = m.config().cls_token_num;
    const ConditionPrefix p = m.text_prefix({1, 2}, 1);
    std::vector<at::Tensor> logits;
    for (std::int64_t raster : {0, 5}) {
      KVCache cache = m.make_cache(1, 0);
      m.forward(prefix_of(m, p), cache);
      logits.push_back(m.forward(image_tokens({3}, {raster}, cls), cache).logits);
    }
    QVERIFY(max_diff(logits[0], logits[1]) > 1e-3);
    KVCache cache = m.make_cache(1, 0);
    EXPECT_ERROR(m.forward(image_tokens({3}, {-2}, cls), cache), "inside the condition prefix");
  }
};

QTEST_GUILESS_MAIN(TestTransformer)
#include "test_transformer.moc"
