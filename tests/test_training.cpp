// Trainers: one optimisation step lowers the loss on a fixed batch (tokenizer and target); a tokenised
// corpus round-trips; the next-token entropy is that of the softmax; weights saved to a bundle load back to identical logits; a short resumable run
// continues from its checkpoint, and its log reads as one run.
#include <c10/core/InferenceMode.h>
#include <torch/optim/adam.h>

#include <QDir>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "data/image_batches.h"
#include "data/shapes_render.h"
#include "eval/prompt_checker.h"
#include "io/bundle.h"
#include "models/random_weights.h"
#include "models/text_vocabulary.h"
#include "test_helpers.h"
#include "train/drafter_trainer.h"
#include "train/feature_net_trainer.h"
#include "train/spatial_heads_trainer.h"
#include "train/target_trainer.h"
#include "train/vq_trainer.h"
#include "speculum_tools.h"

using namespace speculum;

namespace {

// A target run of `steps` steps (1 warm-up, peak lr 1e-3) of `batch` images.
TargetTrainParams short_run(int steps, int batch, int checkpoint_every) {
  TargetTrainParams params;
  params.schedule = {steps, 1, 1e-3, 0.1};
  params.batch = batch;
  params.checkpoint_every = checkpoint_every;
  return params;
}

VqConfig tiny_vq() {
  VqConfig c;
  c.codebook_size = 64;
  c.ch = 16;
  c.ch_mult = {1, 2};
  c.z_channels = 16;
  c.num_res_blocks = 1;
  c.norm_groups = 8;
  return c;
}

GptConfig tiny_gpt() {
  GptConfig c;
  c.dim = 64;
  c.n_layer = 2;
  c.n_head = 4;
  c.vocab_size = 64;
  c.grid_rows = c.grid_cols = 4;
  c.condition = ConditionKind::Text;
  c.cls_token_num = 8;
  c.caption_dim = 32;
  c.text_vocab_size = 12;
  return c;
}

// Teacher-forced logits of `model` on `corpus` (every caption kept).
at::Tensor corpus_logits(const Transformer& model, const TokenizedCorpus& corpus) {
  const auto [prefix, attendable] = model.caption_batch(corpus.words, std::vector<bool>(corpus.words.size(), false));
  return model.forward_teacher(prefix, attendable, corpus.codes);
}

TensorMap trainable(TensorMap weights) {
  for (auto& [name, t] : weights) t.requires_grad_(true);
  return weights;
}

std::vector<at::Tensor> values(const TensorMap& weights) {
  std::vector<at::Tensor> out;
  for (const auto& [name, t] : weights) out.push_back(t);
  return out;
}

TokenizedCorpus small_corpus(int n) {
  TokenizedCorpus corpus;
  corpus.codes = at::randint(0, 64, {n, 16}, at::kLong);
  for (int i = 0; i < n; ++i) corpus.words.push_back({i % 12, (i * 5) % 12, 3});
  return corpus;
}

// The loss weightings' test bed: a tiny random target and two images of a 4x4 corpus, every caption kept.
struct WeightedLossBed {
  explicit WeightedLossBed(std::uint64_t seed)
      : model(tiny_gpt(), random_weights(gpt_tensor_specs(tiny_gpt()), seed), at::kCPU) {}
  double loss(double object_weight = 0, double tops_weight = 0) const {
    return target_loss(model, corpus, {0, 1}, {false, false}, object_weight, tops_weight).item<double>();
  }
  Transformer model;
  TokenizedCorpus corpus = small_corpus(2);
};

// One column of a run's log.csv, a value per logged step (empty if the column is missing).
std::vector<double> log_column(const std::string& run, const QString& name) {
  QFile log(QString::fromStdString(run + "/log.csv"));
  if (!log.open(QIODevice::ReadOnly)) return {};
  const QStringList rows = QString(log.readAll()).trimmed().split('\n');
  const auto column = rows.front().split(',').indexOf(name);
  std::vector<double> values;
  if (column < 0) return values;
  for (int i = 1; i < rows.size(); ++i) values.push_back(rows[i].split(',')[column].toDouble());
  return values;
}

}  // namespace

class TestTraining : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private Q_SLOTS:
  void initTestCase() { at::manual_seed(0); }

  void vq_step_lowers_the_loss() {
    VqModel model(tiny_vq(), trainable(random_weights(vq_tensor_specs(tiny_vq()), 1)), at::kCPU);
    const at::Tensor images = data::shapes_images(0, 8).narrow(2, 0, 32).narrow(3, 0, 32);
    torch::optim::Adam optimizer(values(model.weights()), torch::optim::AdamOptions(1e-3));
    const double before = vq_loss(model, images, 0.25).total.item<double>();
    for (int i = 0; i < 3; ++i) {
      optimizer.zero_grad();
      vq_loss(model, images, 0.25).total.backward();
      optimizer.step();
    }
    const double after = vq_loss(model, images, 0.25).total.item<double>();
    QVERIFY2(after < before, qPrintable(QString("%1 -> %2").arg(before).arg(after)));
  }

  void target_step_lowers_the_loss() {
    const Transformer model(tiny_gpt(), trainable(random_weights(gpt_tensor_specs(tiny_gpt()), 2)), at::kCPU);
    const TokenizedCorpus corpus = small_corpus(8);
    const std::vector<std::int64_t> rows = {0, 1, 2, 3, 4, 5, 6, 7};
    const std::vector<bool> dropped = {false, true, false, false, false, false, true, false};
    torch::optim::Adam optimizer(values(model.weights()), torch::optim::AdamOptions(1e-3));
    const double before = target_loss(model, corpus, rows, dropped).item<double>();
    for (int i = 0; i < 3; ++i) {
      optimizer.zero_grad();
      target_loss(model, corpus, rows, dropped).backward();
      optimizer.step();
    }
    const double after = target_loss(model, corpus, rows, dropped).item<double>();
    QVERIFY2(after < before, qPrintable(QString("%1 -> %2").arg(before).arg(after)));
  }

  void next_token_entropy_is_the_entropy_of_the_softmax() {
    TensorMap weights = random_weights(gpt_tensor_specs(tiny_gpt()), 3);
    const TokenizedCorpus corpus = small_corpus(3);
    const Transformer model(tiny_gpt(), weights, at::kCPU);
    const at::Tensor entropy = next_token_entropy(model, corpus, {0, 2});
    QCOMPARE(entropy.sizes().vec(), (std::vector<std::int64_t>{2, 16}));
    QVERIFY(entropy.min().item<double>() >= 0);
    QVERIFY(entropy.max().item<double>() <= std::log(64.0) + 1e-5);
    // Zero output weights give uniform logits: exactly log(vocabulary) everywhere.
    weights.at("output.weight").zero_();
    const Transformer uniform(tiny_gpt(), weights, at::kCPU);
    const at::Tensor flat = next_token_entropy(uniform, corpus, {1});
    QVERIFY(at::allclose(flat, at::full_like(flat, std::log(64.0)), 1e-5, 1e-5));
  }

  void corpus_round_trips() {
    const TokenizedCorpus corpus = small_corpus(5);
    const std::string path = dir_.path().toStdString() + "/corpus.safetensors";
    TokenizedCorpus with_vocabulary = corpus;
    with_vocabulary.vocabulary = {"red", "piñata", "woman"};
    with_vocabulary.save(path, 8);
    const TokenizedCorpus back = TokenizedCorpus::load(path);
    QVERIFY(at::equal(back.codes, corpus.codes));
    QCOMPARE(back.words, corpus.words);
    QCOMPARE(back.vocabulary, with_vocabulary.vocabulary);
    EXPECT_ERROR(TokenizedCorpus::load(test::bundles_dir() + "/tiny-text/target.safetensors"), "is not a tokenised corpus");
  }

  void class_corpora_round_trip_and_train_only_class_models() {
    TokenizedCorpus corpus = small_corpus(4);
    for (auto& w : corpus.words) w.clear();
    corpus.classes = {0, 3, 3, 9};
    const std::string dir = dir_.path().toStdString();
    corpus.save(dir + "/classes.safetensors", 1);
    const TokenizedCorpus back = TokenizedCorpus::load(dir + "/classes.safetensors");
    QCOMPARE(back.classes, corpus.classes);
    GptConfig class_model = tiny_gpt();
    class_model.condition = ConditionKind::Class;
    class_model.cls_token_num = 1;
    class_model.num_classes = 10;
    class_model.class_null_row = true;
    check_corpus(back, class_model);
    EXPECT_ERROR(check_corpus(back, tiny_gpt()), "the corpus holds class ids, but the model is text-conditioned");
    EXPECT_ERROR(check_corpus(small_corpus(4), class_model), "a class-conditioned model trains on a corpus with a class per image");
    class_model.num_classes = 5;
    EXPECT_ERROR(check_corpus(back, class_model), "the corpus has class 9, outside the model's [0, 5)");
    small_corpus(4).save(dir + "/captions.safetensors", 8);
    EXPECT_ERROR(load_corpora({dir + "/classes.safetensors", dir + "/captions.safetensors"}), "has no classes, unlike");
    QCOMPARE(load_corpora({dir + "/classes.safetensors", dir + "/classes.safetensors"}).classes.size(), std::size_t(8));
    // The teacher-forced pass conditions a class model on each image's class (its null class under dropout).
    class_model.num_classes = 10;
    const Transformer model(class_model, random_weights(gpt_tensor_specs(class_model), 3), at::kCPU);
    at::Tensor tokens;
    const at::Tensor h = teacher_features(model, back, {1, 3}, {false, true}, tokens);
    QCOMPARE(h.sizes().vec(), (std::vector<std::int64_t>{2, 16, 64}));
    const auto [prefix, attendable] = model.class_batch({3, 9}, {false, true});
    const at::Tensor table = model.weights().at("cls_embedding.embedding_table.weight");
    QVERIFY(at::equal(prefix[0][0], table[3]) && at::equal(prefix[1][0], table[10]));  // row 10: the null class
    QVERIFY(attendable.all().item<bool>());
  }

  void t5_corpora_round_trip_and_condition_on_encoded_captions() {
    TokenizedCorpus corpus = small_corpus(3);
    for (auto& w : corpus.words) w.clear();
    corpus.captions = {"a red cat", "a \"quoted\" caption\nwith a newline", "a red cat"};
    const std::string dir = dir_.path().toStdString();
    corpus.save(dir + "/t5.safetensors", 8);
    const TokenizedCorpus back = TokenizedCorpus::load(dir + "/t5.safetensors");
    QCOMPARE(back.captions, corpus.captions);
    GptConfig t5_model = tiny_gpt();
    t5_model.caption_source = CaptionSource::T5;
    check_corpus(back, t5_model);
    EXPECT_ERROR(check_corpus(back, tiny_gpt()), "the corpus holds caption texts for T5, but the model reads vocabulary words");
    EXPECT_ERROR(check_corpus(small_corpus(3), t5_model), "a T5-conditioned model trains on a corpus with a caption text per image");
    small_corpus(2).save(dir + "/words.safetensors", 8);
    EXPECT_ERROR(load_corpora({dir + "/t5.safetensors", dir + "/words.safetensors"}), "has no caption texts, unlike");
    const TensorMap table = {{"codes", back.codes.to(at::kInt)}, {"words", at::full({3, 8}, -1, at::kInt)}};
    save_tensors(dir + "/short.safetensors", table, DType::F32, {{"captions", "[\"one\"]"}});
    EXPECT_ERROR(TokenizedCorpus::load(dir + "/short.safetensors"), "metadata 'captions' must be a JSON array of 3 strings");
    save_tensors(dir + "/numbers.safetensors", table, DType::F32, {{"captions", "[1, 2, 3]"}});
    EXPECT_ERROR(TokenizedCorpus::load(dir + "/numbers.safetensors"), "holds a value that is not a string");
    // Teacher forcing needs the captions encoded first (the tools do it with the bundle's T5 folder).
    const Transformer model(t5_model, random_weights(gpt_tensor_specs(t5_model), 5), at::kCPU);
    at::Tensor tokens;
    EXPECT_ERROR(teacher_features(model, back, {0, 1}, {false, false}, tokens), "have no T5 features");
    TokenizedCorpus encoded = back;
    std::vector<char> slots(8, 0);
    std::fill(slots.begin() + 5, slots.end(), 1);  // three tokens, left-padded
    for (int i = 0; i < 3; ++i) {
      encoded.caption_features.push_back(at::randn({8, 32}) * at::tensor(std::vector<float>(slots.begin(), slots.end())).unsqueeze(1));
      encoded.caption_slots.push_back(slots);
    }
    QCOMPARE(teacher_features(model, encoded, {0, 2}, {false, true}, tokens).sizes().vec(), (std::vector<std::int64_t>{2, 16, 64}));
    // A kept row is its features projected; a dropped row the learned null caption, under the same slots.
    const auto [prefix, attendable] = model.encoded_caption_batch({encoded.caption_features[0], encoded.caption_features[1]},
                                                                  {slots, slots}, {false, true});
    const ConditionPrefix kept = model.caption_prefix(encoded.caption_features[0], slots, 2);  // row 1: the null caption
    QVERIFY(at::allclose(prefix[0], kept.embeddings[0]) && at::allclose(prefix[1], kept.embeddings[1]));
    QCOMPARE(attendable[0].sum().item<int>(), 3);
    QVERIFY(at::equal(attendable[0], attendable[1]));
  }

  void object_shares_round_trip_and_a_corpus_without_them_weighs_as_background() {
    const std::string dir = dir_.path().toStdString();
    TokenizedCorpus shaded = small_corpus(3), plain = small_corpus(2);
    shaded.object_share = at::rand({3, 16});
    shaded.save(dir + "/shaded.safetensors", 8);
    plain.save(dir + "/plain.safetensors", 8);
    const TokenizedCorpus back = TokenizedCorpus::load(dir + "/shaded.safetensors");
    QVERIFY((back.object_share - shaded.object_share).abs().max().item<float>() <= 0.5f / 255 + 1e-6f);  // stored in 8 bits
    QVERIFY(!TokenizedCorpus::load(dir + "/plain.safetensors").object_share.defined());
    const TokenizedCorpus both = load_corpora({dir + "/plain.safetensors", dir + "/shaded.safetensors"});
    QCOMPARE(both.object_share.size(0), 5);
    QCOMPARE(both.object_share.narrow(0, 0, 2).abs().sum().item<float>(), 0.0f);
    QVERIFY(at::equal(both.object_share.narrow(0, 2, 3), back.object_share));
  }

  void object_weighting_is_a_weighted_mean_of_the_token_losses() {
    WeightedLossBed bed(3);
    c10::InferenceMode inference;
    const double plain = bed.loss();
    QCOMPARE(bed.loss(4), plain);  // no shares: the plain mean
    bed.corpus.object_share = at::ones({2, 16});
    QVERIFY(std::abs(bed.loss(4) - plain) < 1e-5);  // uniform weights
    // One object token j: loss_w = (N·plain + w·ce_j) / (N + w), so every w must imply the same ce_j.
    bed.corpus.object_share = at::zeros({2, 16});
    bed.corpus.object_share[1][5] = 1;
    const double n = 32;
    const auto implied = [&](double w) { return ((n + w) * bed.loss(w) - n * plain) / w; };
    const double ce_j = implied(1);
    QVERIFY(ce_j > 0);
    QVERIFY2(std::abs(implied(3) - ce_j) < 1e-3 && std::abs(implied(10) - ce_j) < 1e-3, qPrintable(QString::number(ce_j)));
    const at::Tensor logits = corpus_logits(bed.model, bed.corpus);  // the token's own cross-entropy, computed directly
    const double direct = -at::log_softmax(logits[1][5], -1)[bed.corpus.codes[1][5]].item<double>();
    QVERIFY2(std::abs(direct - ce_j) < 1e-3, qPrintable(QString("%1 vs %2").arg(direct).arg(ce_j)));
  }

  void tops_weighting_adds_weight_on_the_two_rows_where_each_object_starts() {
    WeightedLossBed bed(5);
    c10::InferenceMode inference;
    const double plain = bed.loss();
    // Image 1 on the 4x4 grid: an object over cells 5 and 9 (one column, rows 1-2) and 15 (a second object's onset,
    // the last row). Its tops are 5 (nothing above), 9 (the row below a top) and 15; 13-14 and 0-4 hold nothing.
    bed.corpus.object_share = at::zeros({2, 16});
    bed.corpus.object_share[1][5] = bed.corpus.object_share[1][9] = bed.corpus.object_share[1][15] = 0.5;
    const at::Tensor logits = corpus_logits(bed.model, bed.corpus);
    const auto ce = [&](int cell) { return -at::log_softmax(logits[1][cell], -1)[bed.corpus.codes[1][cell]].item<double>(); };
    const double tops = ce(5) + ce(9) + ce(15), n = 32;
    for (const double w : {1.0, 4.0}) {
      const double expected = (n * plain + w * tops) / (n + 3 * w);  // the same weighted mean, computed by hand
      const double got = bed.loss(0, w);
      QVERIFY2(std::abs(got - expected) < 1e-4, qPrintable(QString("w %1: %2 vs %3").arg(w).arg(got).arg(expected)));
    }
    QVERIFY(std::abs(bed.loss(0, 4) - plain) > 1e-4);  // it moves the loss
    QCOMPARE(bed.loss(0, 0), plain);  // 0: the plain mean
  }

  void corpora_concatenate_when_their_vocabularies_agree() {
    const std::string dir = dir_.path().toStdString();
    TokenizedCorpus shapes = small_corpus(3), with_emoji = small_corpus(4), renumbered = small_corpus(2), wider = small_corpus(2);
    shapes.vocabulary = {"a", "red", "circle"};
    with_emoji.vocabulary = {"a", "red", "circle", "piñata"};  // the shapes words first, then emoji words
    renumbered.vocabulary = {"a", "circle", "red"};
    wider.codes = at::zeros({2, 20}, at::kLong);
    wider.vocabulary = shapes.vocabulary;
    shapes.save(dir + "/shapes.safetensors", 8);
    with_emoji.save(dir + "/emoji.safetensors", 8);
    renumbered.save(dir + "/renumbered.safetensors", 8);
    wider.save(dir + "/wider.safetensors", 8);

    const TokenizedCorpus both = load_corpora({dir + "/shapes.safetensors", dir + "/emoji.safetensors"});
    QCOMPARE(both.size(), 7);
    QVERIFY(at::equal(both.codes, at::cat({shapes.codes, with_emoji.codes})));
    QCOMPARE(both.words.front(), shapes.words.front());
    QCOMPARE(both.words.back(), with_emoji.words.back());
    QCOMPARE(both.vocabulary, with_emoji.vocabulary);  // the longer one, whichever order
    QCOMPARE(load_corpora({dir + "/emoji.safetensors", dir + "/shapes.safetensors"}).vocabulary, with_emoji.vocabulary);

    EXPECT_ERROR(load_corpora({dir + "/shapes.safetensors", dir + "/renumbered.safetensors"}), "word 1: 'circle' vs 'red'");
    EXPECT_ERROR(load_corpora({dir + "/shapes.safetensors", dir + "/wider.safetensors"}), "has 20 tokens per image");
    EXPECT_ERROR(load_corpora({}), "no training corpus");
  }

  void folder_datasets_load_and_name_problems() {
    const std::string folder = dir_.path().toStdString() + "/shapes";
    QDir().mkpath(QString::fromStdString(folder));
    std::string index;
    for (int i = 0; i < 3; ++i) {
      const data::Scene scene = data::sample_scene(i);
      const std::string file = std::to_string(i) + ".png";
      eval::write_rgb_png(folder + "/" + file, data::render_scene(scene));
      index += nlohmann::json{{"file", file}, {"caption", scene.caption()}}.dump() + "\n";
    }
    test::write_bytes(folder + "/captions.jsonl", index);
    const data::FolderDataset dataset = data::load_folder_dataset(folder);
    QCOMPARE(dataset.images.sizes().vec(), (std::vector<std::int64_t>{3, 3, 64, 64}));
    QCOMPARE(dataset.captions[2], data::sample_scene(2).caption());
    QVERIFY(at::allclose(dataset.images[1], data::shapes_images(1, 1)[0]));  // PNG round trip is lossless
    const at::Tensor batch = data::crop_batches(dataset.images, 5, 4, 32, 4)(0);
    QCOMPARE(batch.sizes().vec(), (std::vector<std::int64_t>{4, 3, 32, 32}));
    QVERIFY(at::equal(batch, data::crop_batches(dataset.images, 5, 4, 32, 4)(0)));
    test::write_bytes(folder + "/captions.jsonl", index + R"({"file": "missing.png", "caption": "x"})" "\n");
    EXPECT_ERROR(data::load_folder_dataset(folder), "cannot read image");
    EXPECT_ERROR(data::load_folder_dataset(folder + "/none"), "no such file (make it with speculum-cli data");
  }

  void saved_bundle_gives_identical_logits() {
    const GptConfig config = tiny_gpt();
    const TensorMap weights = random_weights(gpt_tensor_specs(config), 3);
    const std::string path = dir_.path().toStdString() + "/target.safetensors";
    save_tensors(path, weights);
    const Transformer original(config, weights, at::kCPU);
    const Transformer loaded(config, load_tensors(SafetensorsFile::open(path), gpt_tensor_specs(config), at::kCPU), at::kCPU);
    const TokenizedCorpus corpus = small_corpus(2);
    const auto [p1, a1] = original.caption_batch(corpus.words, {false, false});
    const auto [p2, a2] = loaded.caption_batch(corpus.words, {false, false});
    QVERIFY(at::equal(original.forward_teacher(p1, a1, corpus.codes), loaded.forward_teacher(p2, a2, corpus.codes)));
  }

  // train samples judges each image: with only_passing it keeps the passes, each as the engine drew it under its own
  // caption; without, it keeps every image with its verdict; several images per caption share it.
  void samples_keep_their_verdicts_or_only_the_passes() {
    SamplesRequest request;
    request.bundle = test::shipped_bundle_dir();
    request.out = dir_.path().toStdString() + "/kept.safetensors";
    request.count = 4;
    request.scene_seed = 40000;
    request.threads = 1;
    std::vector<std::vector<int>> offered;
    request.judge = [&](const GenerateParams& p, const GenerateResult& r) {
      offered.push_back(r.tokens);
      return p.seed % 2 == 1;
    };
    request.only_passing = true;
    generate_samples(request);
    QCOMPARE(offered.size(), std::size_t(4));
    const TokenizedCorpus kept = TokenizedCorpus::load(request.out);
    QCOMPARE(kept.size(), std::int64_t(2));
    QCOMPARE(kept.passed, std::vector<char>({1, 1}));
    const BundleManifest m = read_manifest(request.bundle);
    const TextVocabulary vocabulary(m.text_vocab);
    for (int k = 0; k < 2; ++k) {
      const int i = 2 * k + 1;  // the odd seeds
      const at::Tensor expected = at::tensor(std::vector<std::int64_t>(offered[i].begin(), offered[i].end()), at::kLong);
      QVERIFY(at::equal(kept.codes[k], expected));
      QCOMPARE(kept.words[k], vocabulary.encode(data::sample_scene(request.scene_seed + i).caption()));
    }
    // Every image with its verdict, two per caption: images 0 and 1 under scene 40000's caption, 2 and 3 under 40001's.
    request.only_passing = false;
    request.per_caption = 2;
    request.out = dir_.path().toStdString() + "/judged.safetensors";
    offered.clear();
    generate_samples(request);
    const TokenizedCorpus judged = TokenizedCorpus::load(request.out);
    QCOMPARE(judged.size(), std::int64_t(4));
    QCOMPARE(judged.passed, std::vector<char>({0, 1, 0, 1}));
    for (int i = 0; i < 4; ++i)
      QCOMPARE(judged.words[i], vocabulary.encode(data::sample_scene(request.scene_seed + i / 2).caption()));
    QVERIFY(!at::equal(judged.codes[0], judged.codes[1]));  // the same caption, its own seed
    const PreferencePairs pairs = preference_pairs(judged);
    QCOMPARE(pairs.captions(), std::size_t(2));
    QCOMPARE(pairs.passed[0], std::vector<std::int64_t>({1}));
    QCOMPARE(pairs.failed[0], std::vector<std::int64_t>({0}));
    // A filter that keeps nothing writes nothing, and says so.
    request.out = dir_.path().toStdString() + "/none.safetensors";
    request.only_passing = true;
    request.judge = [](const GenerateParams&, const GenerateResult&) { return false; };
    EXPECT_ERROR(generate_samples(request), "none of the 4 images was kept; nothing written");
    QVERIFY(!QFile::exists(QString::fromStdString(request.out)));
    request.judge = nullptr;
    EXPECT_ERROR(generate_samples(request), "only_passing needs a judge");
    // The checker's verdict, which --only-passing keeps by: none on what is not a shapes caption.
    Image blank;
    blank.width = blank.height = 64;
    blank.rgb.assign(64 * 64 * 3, 128);
    QVERIFY(!shapes_checker_verdict("grinning face", blank).has_value());
    const data::Scene scene = data::sample_scene(40001);
    QCOMPARE(shapes_checker_verdict(scene.caption(), blank), std::optional<bool>(false));
    const cv::Mat rendered = data::render_scene(scene);
    Image drawn;
    drawn.width = rendered.cols;
    drawn.height = rendered.rows;
    drawn.rgb.assign(rendered.data, rendered.data + rendered.total() * 3);
    QCOMPARE(shapes_checker_verdict(scene.caption(), drawn), std::optional<bool>(true));
  }

  void drafter_training_lowers_its_loss_and_resumes() {
    const Transformer target(tiny_gpt(), random_weights(gpt_tensor_specs(tiny_gpt()), 5), at::kCPU);
    const TokenizedCorpus corpus = small_corpus(16);
    const at::Tensor codes = at::randn({64, 8});
    for (DrafterObjective objective : {DrafterObjective::Eagle, DrafterObjective::Lisa}) {
      const std::string run = dir_.path().toStdString() + "/drafter-" + drafter_objective_name(objective);
      DrafterTrainParams params;
      params.schedule = {40, 1, 3e-3, 0.1};
      params.batch = 4;
      params.objective = objective;
      params.log_every = 1;
      params.checkpoint_every = 20;
      std::vector<double> losses;
      std::atomic<bool> stop{false};
      const auto log = [&](const std::string& line) {
        const auto at = line.find("  loss ");
        if (at != std::string::npos) losses.push_back(std::stod(line.substr(at + 7)));
        if (losses.size() == 20) stop = true;  // the checkpoint at step 20
      };
      train_drafter(target, codes, params, run, corpus, corpus, log, &stop);
      CheckpointState state;
      QVERIFY(read_checkpoint_state(run, state));
      QCOMPARE(state.step, 20);
      std::vector<std::string> resumed;
      const TensorMap weights = train_drafter(target, codes, params, run, corpus, corpus, [&](const std::string& line) {
        resumed.push_back(line);
        log(line);
      });
      QVERIFY(resumed.front().find("resuming drafter training at step 20") != std::string::npos);
      QCOMPARE(losses.size(), std::size_t(40));
      const double first = (losses[0] + losses[1] + losses[2]) / 3, last = (losses[37] + losses[38] + losses[39]) / 3;
      QVERIFY2(last < 0.8 * first, qPrintable(QString("%1: loss %2 -> %3").arg(drafter_objective_name(objective)).arg(first).arg(last)));
      // The trained drafter loads like a shipped one and fits the target better than its starting point.
      const Drafter trained(target, weights), untrained(target, initial_drafter_weights(tiny_gpt(), 0));
      QVERIFY(drafter_fit(trained, corpus, 16).acceptance > drafter_fit(untrained, corpus, 16).acceptance);
      // A warm start (init_from) begins at that run's weights: with a zero learning rate they come back unchanged.
      DrafterTrainParams warm = params;
      warm.init_from = run;
      warm.schedule = {1, 1, 0.0, 0.1};
      const TensorMap started = train_drafter(target, codes, warm, run + "-warm", corpus, corpus, [](const std::string&) {});
      for (const auto& [name, t] : weights) QVERIFY2(at::equal(started.at(name), t), name.c_str());
    }
    DrafterTrainParams warm;
    warm.init_from = dir_.path().toStdString() + "/no-such-run";
    EXPECT_ERROR(train_drafter(target, codes, warm, dir_.path().toStdString() + "/warm-x", corpus, corpus, [](const std::string&) {}),
                 "no-such-run' is not a drafter run");
    EXPECT_ERROR(parse_drafter_objective("medusa"), "unknown drafter objective 'medusa' (allowed: eagle, lisa)");
  }

  void feature_network_learns_scene_attributes() {
    // Labels: one per presence bit and class group, read from the scene description.
    data::Scene scene = data::sample_scene(5);
    scene.family = data::Family::Relation;
    scene.relation = data::Relation::Above;
    scene.objects = {{data::Shape::Star, data::ObjectColor::Blue, 20, 20, 12}, {data::Shape::Circle, data::ObjectColor::Red, 40, 40, 12}};
    const FeatureNetLabels labels = feature_net_labels(scene);
    QCOMPARE(labels.presence, (std::vector<float>{1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0}));  // circle, star; red, blue
    QCOMPARE(labels.classes[2], int(data::Family::Relation));
    QCOMPARE(labels.classes[3], 1);  // two objects
    QCOMPARE(labels.classes[4], 1 + int(data::Relation::Above));

    const std::string run = dir_.path().toStdString() + "/features";
    FeatureNetTrainParams params;
    params.schedule = {30, 1, 3e-3, 0.1};
    params.log_every = 1;
    params.checkpoint_every = 30;
    const SceneBatch held_out = data::shapes_scene_batch(900000000, 32);
    std::vector<double> losses;
    const TensorMap weights = train_feature_net(params, run, data::shapes_scene_batches(0, 16), held_out, [&](const std::string& line) {
      const auto at = line.find("  loss ");
      if (at != std::string::npos) losses.push_back(std::stod(line.substr(at + 7)));
    });
    QCOMPARE(losses.size(), std::size_t(30));
    const double first = (losses[0] + losses[1] + losses[2]) / 3, last = (losses[27] + losses[28] + losses[29]) / 3;
    QVERIFY2(last < 0.8 * first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
    const FeatureNet trained(weights), untrained(random_weights(feature_net_tensor_specs(), 0));
    QVERIFY(feature_net_fit(trained, held_out).accuracy > feature_net_fit(untrained, held_out).accuracy);
    // Saved with its format tag it loads back to the same features; another safetensors file is refused by name.
    const std::string path = dir_.path().toStdString() + "/features.safetensors";
    save_tensors(path, weights, DType::F32, {{"format", kFeatureNetFormat}});
    c10::InferenceMode inference;
    QVERIFY(at::allclose(FeatureNet::load(path).features(held_out.images), trained.features(held_out.images)));
    QCOMPARE(trained.features(held_out.images).sizes().vec(), (std::vector<std::int64_t>{32, kFeatureNetFeatures}));
    const std::string other = dir_.path().toStdString() + "/other.safetensors";
    save_tensors(other, weights);
    EXPECT_ERROR(FeatureNet::load(other), "is not a shapes feature network");
    EXPECT_ERROR(trained.features(at::zeros({1, 3, 32, 32})), "expected images [B, 3, 64, 64], got [1, 3, 32, 32]");
  }

  void spatial_heads_training_lowers_its_loss_and_fits_better() {
    const Transformer target(tiny_gpt(), random_weights(gpt_tensor_specs(tiny_gpt()), 5), at::kCPU);
    const TokenizedCorpus corpus = small_corpus(16);
    const std::string run = dir_.path().toStdString() + "/ssd-heads";
    SpatialHeadsTrainParams params;
    params.schedule = {40, 1, 3e-3, 0.1};
    params.horizontal = 3;
    params.vertical = 2;
    params.batch = 4;
    params.log_every = 1;
    std::vector<double> losses;
    const TensorMap weights = train_spatial_heads(target, params, run, corpus, corpus, [&](const std::string& line) {
      const auto at = line.find("  loss ");
      if (at != std::string::npos) losses.push_back(std::stod(line.substr(at + 7)));
    });
    QCOMPARE(losses.size(), std::size_t(40));
    const double first = (losses[0] + losses[1] + losses[2]) / 3, last = (losses[37] + losses[38] + losses[39]) / 3;
    QVERIFY2(last < 0.8 * first, qPrintable(QString("SSD heads: loss %1 -> %2").arg(first).arg(last)));
    const SpatialHeads trained(target, weights, 3, 2), untrained(target, initial_spatial_heads_weights(tiny_gpt(), 3, 2, 0), 3, 2);
    const std::vector<double> after = spatial_heads_fit(trained, corpus, 16), before = spatial_heads_fit(untrained, corpus, 16);
    QCOMPARE(after.size(), std::size_t(5));  // three horizontal heads, then two vertical
    for (std::size_t k = 0; k < after.size(); ++k) {
      QVERIFY(after[k] > 0 && after[k] <= 1);
      QVERIFY2(after[k] > before[k], qPrintable(QString("head %1: %2 -> %3").arg(k).arg(before[k]).arg(after[k])));
    }
    // A warm start from these heads begins at their weights; heads the source lacks are refused by name.
    SpatialHeadsTrainParams warm = params;
    warm.init_from = run;
    warm.schedule = {1, 1, 0.0, 0.1};
    const TensorMap started = train_spatial_heads(target, warm, run + "-warm", corpus, corpus, [](const std::string&) {});
    for (const auto& [name, t] : weights) QVERIFY2(at::equal(started.at(name), t), name.c_str());
    warm.horizontal = 4;
    EXPECT_ERROR(train_spatial_heads(target, warm, run + "-warm4", corpus, corpus, [](const std::string&) {}),
                 "lacks tensor 'horizontal.3.");
    EXPECT_ERROR(trained.predict(SpatialDirection::Horizontal, 4, at::zeros({1, tiny_gpt().dim}), at::zeros({1}, at::kLong)),
                 "no horizontal SSD head for offset 4 (the bundle has 3)");
  }

  void locality_radius_is_the_mean_kth_neighbour_distance() {
    const at::Tensor codes = at::tensor({0.0f, 1.0f, 3.0f, 6.0f}, at::kFloat).reshape({4, 1});
    // Nearest other code: 1, 1, 2, 3 -> mean 1.75; second nearest: 3, 2, 3, 5 -> mean 3.25.
    QVERIFY(std::abs(codebook_locality_radius(codes, 1) - 1.75) < 1e-6);
    QVERIFY(std::abs(codebook_locality_radius(codes, 2) - 3.25) < 1e-6);
  }

  void short_target_run_resumes_from_its_checkpoint() {
    const std::string run = dir_.path().toStdString() + "/run";
    const TargetTrainParams params = short_run(4, 4, 2);
    const TokenizedCorpus corpus = small_corpus(16);
    std::atomic<bool> stop{false};
    int lines = 0;
    auto progress = [&](const std::string&) {
      if (++lines == 1) stop = true;  // stop at the first logged (checkpoint) step
    };
    train_target(tiny_gpt(), params, run, corpus, {}, progress, &stop);
    CheckpointState state;
    QVERIFY(read_checkpoint_state(run, state));
    QCOMPARE(state.step, 2);
    std::vector<std::string> resumed;
    const TensorMap final_weights =
        train_target(tiny_gpt(), params, run, corpus, {}, [&](const std::string& line) { resumed.push_back(line); });
    QVERIFY(resumed.front().find("resuming target training at step 2") != std::string::npos);
    QVERIFY(read_checkpoint_state(run, state));
    QCOMPARE(state.step, 4);
    QVERIFY(final_weights.count("layers.1.feed_forward.w2.weight"));
    // The EMA weights are returned and checkpointed next to the raw ones, and they lag behind them.
    const auto specs = gpt_tensor_specs(tiny_gpt());
    const TensorMap raw = load_tensors(SafetensorsFile::open(checkpoint_dir(run) + "/weights.safetensors"), specs, at::kCPU);
    const TensorMap ema = load_tensors(SafetensorsFile::open(checkpoint_dir(run) + "/ema.safetensors"), specs, at::kCPU);
    QVERIFY(at::equal(ema.at("norm.weight"), final_weights.at("norm.weight")));
    QVERIFY(!at::equal(raw.at("layers.0.attention.wqkv.weight"), ema.at("layers.0.attention.wqkv.weight")));
    EXPECT_ERROR(train_target(tiny_gpt(), params, run + "2", TokenizedCorpus{}, {}, progress), "corpus is empty");
  }

  void caption_reading_learns_the_words_and_resumes() {
    const std::string run = dir_.path().toStdString() + "/reading";
    TargetTrainParams params = short_run(40, 16, 20);
    params.caption_reading = 1;
    params.caption_dropout = 0;
    params.log_every = 1;
    TokenizedCorpus corpus = small_corpus(16);
    EXPECT_ERROR(train_target(tiny_gpt(), params, run, corpus, {}, [](const std::string&) {}), "object shares");
    corpus.vocabulary = {"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9", "w10", "w11"};
    corpus.object_share = at::zeros({16, 16});
    for (int i = 0; i < 16; ++i) corpus.object_share[i].narrow(0, 4 * (1 + i % 3), 2).fill_(0.5);  // rows 1..3
    params.stop_at = 20;
    train_target(tiny_gpt(), params, run, corpus, {}, [](const std::string&) {});
    params.stop_at = 0;
    std::vector<std::string> lines;
    train_target(tiny_gpt(), params, run, corpus, {}, [&](const std::string& line) { lines.push_back(line); });
    QVERIFY(lines.front().find("resuming target training at step 20") != std::string::npos);
    const TensorMap reader = load_tensors(SafetensorsFile::open(checkpoint_dir(run) + "/caption_reader.safetensors"),
                                          {{"weight", {12, 64}}, {"bias", {12}}}, at::kCPU);
    QVERIFY(reader.count("weight") && reader.count("bias"));
    // The log's caption_reading column: the bag's loss (16 images, 3 distinct words each of 12) falls as the reader
    // and the model learn which words each image's first object row stands for.
    const std::vector<double> reading = log_column(run, "caption_reading");
    QVERIFY(reading.size() >= 2);
    QVERIFY2(reading.back() < 0.7 * reading.front(), qPrintable(QString("caption_reading %1 -> %2").arg(reading.front()).arg(reading.back())));
  }

  void caption_contrast_learns_to_prefer_the_true_caption() {
    const std::string run = dir_.path().toStdString() + "/contrast";
    TargetTrainParams params = short_run(40, 16, 40);
    params.caption_contrast = 1;
    params.caption_dropout = 0;
    params.log_every = 1;
    // Half the images say "circle" and are drawn in code 5, half say "square" and are drawn in code 9.
    TokenizedCorpus corpus;
    corpus.codes = at::empty({16, 16}, at::kLong);
    for (int i = 0; i < 16; ++i) {
      corpus.words.push_back({i % 2, 3});
      corpus.codes[i].fill_(i % 2 ? 9 : 5);
    }
    corpus.vocabulary = {"circle", "square", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9", "w10", "w11"};
    params.caption_contrast = 0;
    params.contrast_exchange = 0.5;  // exchanges are foils of the contrast: refused without it
    EXPECT_ERROR(train_target(tiny_gpt(), params, run, corpus, {}, [](const std::string&) {}), "needs the caption contrast");
    params.contrast_exchange = 0;
    params.contrast_copy = 0.5;  // so are copies
    EXPECT_ERROR(train_target(tiny_gpt(), params, run, corpus, {}, [](const std::string&) {}), "needs the caption contrast");
    params.caption_contrast = 1;
    params.contrast_exchange = 0.6;  // both are shares of the foils
    EXPECT_ERROR(train_target(tiny_gpt(), params, run, corpus, {}, [](const std::string&) {}), "together at most 1");
    params.contrast_exchange = 0;
    params.contrast_copy = 0;
    params.foil_groups = {{"star", "w4"}};  // one word of it in the vocabulary: nothing to swap
    EXPECT_ERROR(train_target(tiny_gpt(), params, run, corpus, {}, [](const std::string&) {}), "words to swap");
    params.foil_groups = {{"circle", "square", "star"}};
    train_target(tiny_gpt(), params, run, corpus, {}, [](const std::string&) {});
    // Every image has a foil (its other shape word); the margin by which its own caption explains it better starts
    // near 0 (an untrained model reads neither) and grows, and the loss -log σ(margin) falls from log 2.
    const std::vector<double> loss = log_column(run, "caption_contrast"), margin = log_column(run, "foil_margin");
    QVERIFY(loss.size() >= 2 && margin.size() == loss.size());
    QVERIFY2(std::abs(loss.front() - std::log(2.0)) < 0.2, qPrintable(QString("first loss %1").arg(loss.front())));
    QVERIFY2(margin.back() > 10, qPrintable(QString("margin %1 -> %2").arg(margin.front()).arg(margin.back())));
    QVERIFY2(loss.back() < 0.01, qPrintable(QString("loss -> %1").arg(loss.back())));

    // On the object tops only: refused without object shares; with them, learned as well.
    params.contrast_object_tops = true;
    EXPECT_ERROR(train_target(tiny_gpt(), params, run + "-tops", corpus, {}, [](const std::string&) {}), "object shares");
    corpus.object_share = at::zeros({16, 16});
    corpus.object_share.narrow(1, 4, 8).fill_(1.0f);  // grid rows 1-2: the tops are those 8 cells
    train_target(tiny_gpt(), params, run + "-tops", corpus, {}, [](const std::string&) {});
    // The margin, now summed over the 8 top cells, grows as the image's did.
    const std::vector<double> tops_margin = log_column(run + "-tops", "foil_margin");
    QVERIFY(!tops_margin.empty());
    QVERIFY2(tops_margin.back() > 5, qPrintable(QString("object-tops margin %1").arg(tops_margin.back())));
  }

  // DPO on judged samples: pairs only from captions with both verdicts; the margin (the passing images' gain over the
  // reference minus the failing ones') starts at 0 and grows; the loss needs its reference and its pairs.
  void preference_loss_prefers_the_passing_images() {
    TokenizedCorpus judged;
    judged.codes = at::empty({12, 16}, at::kLong);
    for (int i = 0; i < 12; ++i) {
      judged.words.push_back({i < 8 ? 0 : 1, 3});  // caption 0: images 0-7; caption 1: images 8-11, all failing
      judged.codes[i].fill_(i % 2 ? 9 : 5);        // under caption 0 the passes draw code 9, the failures code 5
      judged.passed.push_back(i < 8 && i % 2);
    }
    judged.vocabulary = {"circle", "square", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9", "w10", "w11"};
    const PreferencePairs pairs = preference_pairs(judged);
    QCOMPARE(pairs.captions(), std::size_t(1));
    QCOMPARE(pairs.passed[0], std::vector<std::int64_t>({1, 3, 5, 7}));
    QCOMPARE(pairs.failed[0], std::vector<std::int64_t>({0, 2, 4, 6}));
    TokenizedCorpus unjudged = judged;
    unjudged.passed.clear();
    EXPECT_ERROR(preference_pairs(unjudged), "verdicts");
    TokenizedCorpus one_sided = judged;
    std::fill(one_sided.passed.begin(), one_sided.passed.end(), 0);
    EXPECT_ERROR(preference_pairs(one_sided), "--per-caption");
    // Verdicts round-trip and concatenate only with verdicts.
    const std::string file = dir_.path().toStdString() + "/judged-pairs.safetensors";
    judged.save(file, 4);
    QCOMPARE(TokenizedCorpus::load(file).passed, judged.passed);
    const std::string plain = dir_.path().toStdString() + "/plain.safetensors";
    unjudged.save(plain, 4);
    EXPECT_ERROR(load_corpora({file, plain}), "has no verdicts");
    // A verdict that is not 0 or 1, or not one per image, is refused naming the tensor.
    const std::string bad = dir_.path().toStdString() + "/bad-verdicts.safetensors";
    const at::Tensor words = at::full({12, 4}, -1, at::kInt);
    save_tensors(bad, {{"codes", judged.codes.to(at::kInt)}, {"words", words}, {"passed", at::full({12}, 2, at::kByte)}});
    EXPECT_ERROR(TokenizedCorpus::load(bad), "'passed' holds 2; a verdict is 0 or 1");
    save_tensors(bad, {{"codes", judged.codes.to(at::kInt)}, {"words", words}, {"passed", at::ones({11}, at::kByte)}});
    EXPECT_ERROR(TokenizedCorpus::load(bad), "'passed' must be U8 [12], a verdict per image");

    // The reference is the model the run starts from: a first run makes it.
    const std::string base = dir_.path().toStdString() + "/preference-base";
    TargetTrainParams params = short_run(2, 4, 2);
    train_target(tiny_gpt(), params, base, judged, {}, [](const std::string&) {});
    params = short_run(30, 4, 30);
    params.caption_dropout = 0;
    params.log_every = 1;
    params.preference = 1;
    params.preference_pairs = 4;
    const std::string run = dir_.path().toStdString() + "/preference";
    EXPECT_ERROR(train_target(tiny_gpt(), params, run, judged, {}, [](const std::string&) {}, nullptr, judged), "--init-from");
    params.init_from = base;
    train_target(tiny_gpt(), params, run, judged, {}, [](const std::string&) {}, nullptr, judged);
    const std::vector<double> loss = log_column(run, "preference"), margin = log_column(run, "preference_margin");
    QVERIFY(loss.size() >= 2 && margin.size() == loss.size());
    QVERIFY2(std::abs(margin.front()) < 1 && std::abs(loss.front() - std::log(2.0)) < 0.05,
             qPrintable(QString("first margin %1, loss %2").arg(margin.front()).arg(loss.front())));
    QVERIFY2(margin.back() > 5, qPrintable(QString("margin %1 -> %2").arg(margin.front()).arg(margin.back())));
    QVERIFY2(loss.back() < loss.front() - 0.2, qPrintable(QString("loss %1 -> %2").arg(loss.front()).arg(loss.back())));
  }

  void foils_swap_one_word_exchange_a_captions_two_or_copy_one() {
    TokenizedCorpus corpus;
    corpus.vocabulary = {"red", "blue", "green", "circle", "star", "left", "right", "a", "of"};
    // A relation with two colours and two shapes; one with one colour twice (only its shapes can exchange); a
    // single object (nothing to exchange); a caption with no replaceable word.
    corpus.words = {{7, 0, 3, 5, 8, 7, 1, 4}, {7, 0, 3, 6, 8, 7, 0, 4}, {7, 2, 4}, {7, 8}};
    const FoilTable replace = FoilTable::of(corpus.vocabulary, {{"circle", "star", "square"}, {"left", "right"}});
    const FoilTable exchange = FoilTable::of(corpus.vocabulary, {{"red", "blue", "green"}, {"circle", "star"}});
    QCOMPARE(replace.group_ids.size(), std::size_t(2));  // "square" is not in the vocabulary
    CorpusBatch batch{{0, 1, 2, 3, 0, 1, 2, 3}, std::vector<bool>(8, false)};
    batch.null_caption[7] = true;  // trained under the null caption: no foil
    const auto differing = [](const std::vector<int>& a, const std::vector<int>& b) {
      std::vector<std::size_t> at;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) at.push_back(i);
      return at;
    };
    std::set<std::vector<int>> exchanged, copied_foils;
    std::map<std::size_t, int> mixed_kinds;  // words changed (1: a copy, 2: an exchange) -> foils
    for (int step = 0; step < 40; ++step) {
      const Foils swaps = draw_foils(replace, exchange, 0, 0, corpus, batch, 7, step);
      QCOMPARE(swaps.batch_rows, (std::vector<std::int64_t>{0, 1, 2, 4, 5, 6}));
      for (std::size_t f = 0; f < swaps.words.size(); ++f) {  // one word replaced by another of its group
        const auto& caption = corpus.words[static_cast<std::size_t>(batch.rows[static_cast<std::size_t>(swaps.batch_rows[f])])];
        const auto at = differing(caption, swaps.words[f]);
        QCOMPARE(at.size(), std::size_t(1));
        QCOMPARE(replace.group_of[swaps.words[f][at[0]]], replace.group_of[caption[at[0]]]);
      }
      const Foils exchanges = draw_foils(replace, exchange, 1, 0, corpus, batch, 7, step);
      QCOMPARE(exchanges.batch_rows, swaps.batch_rows);
      for (std::size_t f = 0; f < exchanges.words.size(); ++f) {
        const std::size_t row = static_cast<std::size_t>(batch.rows[static_cast<std::size_t>(exchanges.batch_rows[f])]);
        const auto& caption = corpus.words[row];
        const auto at = differing(caption, exchanges.words[f]);
        if (row == 2) {  // nothing to exchange: the one-word swap, the same one as without exchanges
          QCOMPARE(exchanges.words[f], swaps.words[f]);
          continue;
        }
        QCOMPARE(at.size(), std::size_t(2));  // two different words of one group, exchanged
        QCOMPARE(exchanges.words[f][at[0]], caption[at[1]]);
        QCOMPARE(exchanges.words[f][at[1]], caption[at[0]]);
        QCOMPARE(exchange.group_of[caption[at[0]]], exchange.group_of[caption[at[1]]]);
        if (row == 1) QCOMPARE(at, (std::vector<std::size_t>{2, 7}));  // its one colour twice cannot exchange
        exchanged.insert(exchanges.words[f]);
      }
      const Foils copies = draw_foils(replace, exchange, 0, 1, corpus, batch, 7, step);
      QCOMPARE(copies.batch_rows, swaps.batch_rows);
      for (std::size_t f = 0; f < copies.words.size(); ++f) {
        const std::size_t row = static_cast<std::size_t>(batch.rows[static_cast<std::size_t>(copies.batch_rows[f])]);
        const auto& caption = corpus.words[row];
        if (row == 2) {  // nothing to copy: the one-word swap again
          QCOMPARE(copies.words[f], swaps.words[f]);
          continue;
        }
        const auto at = differing(caption, copies.words[f]);
        QCOMPARE(at.size(), std::size_t(1));  // one word of a pair became the pair's other word
        const int copied = copies.words[f][at[0]];
        QVERIFY(copied != caption[at[0]] && exchange.group_of[copied] == exchange.group_of[caption[at[0]]]);
        QCOMPARE(std::count(caption.begin(), caption.end(), copied), std::ptrdiff_t(1));
        if (row == 1) QVERIFY(at[0] == 2 || at[0] == 7);  // only its shapes differ
        copied_foils.insert(copies.words[f]);
      }
      // Half exchanges, half copies: every caption with a pair gets one or the other, drawn with one number.
      const Foils mixed = draw_foils(replace, exchange, 0.5, 0.5, corpus, batch, 7, step);
      for (std::size_t f = 0; f < mixed.words.size(); ++f) {
        const std::size_t row = static_cast<std::size_t>(batch.rows[static_cast<std::size_t>(mixed.batch_rows[f])]);
        if (row == 2) continue;
        const std::size_t changed = differing(corpus.words[row], mixed.words[f]).size();
        QVERIFY(changed == 1 || changed == 2);
        ++mixed_kinds[changed];
      }
    }
    // Both of the relation's exchanges (colours, shapes) are drawn, and the shapes-only one of the second caption;
    // copies in both directions: the relation's 2 pairs × 2 and the second caption's shapes × 2.
    QCOMPARE(exchanged.size(), std::size_t(3));
    QCOMPARE(copied_foils.size(), std::size_t(6));
    QVERIFY2(mixed_kinds[1] > 20 && mixed_kinds[2] > 20,
             qPrintable(QString("copies %1, exchanges %2 of 160").arg(mixed_kinds[1]).arg(mixed_kinds[2])));
  }

  void tokenize_keeps_only_the_asked_families_and_backgrounds() {
    TokenizeRequest request;
    request.vq_run = test::shipped_vq_run();
    request.out = dir_.path().toStdString() + "/relations.safetensors";
    request.count = 6;
    request.seed = 100;
    request.families = {"relation", "count"};
    request.backgrounds = {"flat"};
    tokenize_scenes(request);
    const TokenizedCorpus corpus = TokenizedCorpus::load(request.out);
    QCOMPARE(corpus.size(), std::int64_t(6));
    // The first six scenes from seed 100 that are relations or counts on a flat background, in order.
    const TextVocabulary vocabulary(corpus.vocabulary);
    std::size_t row = 0;
    for (std::uint64_t seed = 100; row < 6; ++seed) {
      const data::Scene scene = data::sample_scene(seed);
      if (scene.family == data::Family::Single || scene.mode != data::BackgroundMode::Flat) continue;
      QCOMPARE(corpus.words[row++], vocabulary.encode(scene.caption()));
    }
    request.families = {"pair"};
    EXPECT_ERROR(tokenize_scenes(request), "family 'pair': allowed single, count, relation");
  }

  void object_tops_are_each_objects_first_two_rows() {
    // A 5 x 4 grid: an object over rows 1-3 of column 0, a sliver (below a twentieth: none) and an object over rows
    // 2-4 of column 2, one in row 4 of column 3.
    at::Tensor shares = at::zeros({5, 4});
    shares.narrow(0, 1, 3).select(1, 0).fill_(1.0f);
    shares[1][2] = 0.04f;
    shares.narrow(0, 2, 3).select(1, 2).fill_(0.5f);
    shares[4][3] = 0.2f;
    at::Tensor expected = at::zeros({5, 4});
    expected[1][0] = expected[2][0] = 1;  // top and the cell below it
    expected[2][2] = expected[3][2] = 1;
    expected[4][3] = 1;  // a top in the last row has no cell below
    const at::Tensor tops = object_tops(shares.reshape({1, 20}), 5, 4);
    QCOMPARE(tops.sizes().vec(), (std::vector<std::int64_t>{1, 20}));
    QVERIFY(at::equal(tops.view({5, 4}), expected));
  }

  void a_grown_run_starts_where_its_source_ended() {
    // A bag-of-words model is trained a little, then grown by a caption encoder, cell positions and two more blocks:
    // before its first step the grown model computes exactly what the source's EMA weights did.
    const std::string source = dir_.path().toStdString() + "/bag";
    const TokenizedCorpus corpus = small_corpus(16);
    const TensorMap trained = train_target(tiny_gpt(), short_run(3, 4, 100), source, corpus, {}, [](const std::string&) {});
    GptConfig grown = tiny_gpt();
    grown.text_encoder_layers = 2;
    grown.image_positions = true;
    grown.n_layer = tiny_gpt().n_layer + 2;
    TargetTrainParams params = short_run(0, 4, 100);
    params.init_from = source;
    std::vector<std::string> lines;
    const TensorMap start = train_target(grown, params, source + "-grown", corpus, {}, [&](const std::string& l) { lines.push_back(l); });
    QVERIFY(!lines.empty() && lines.front().find("start as the identity") != std::string::npos);
    QCOMPARE(start.size(), gpt_tensor_specs(grown).size());
    at::NoGradGuard no_grad;
    const at::Tensor before = corpus_logits(Transformer(tiny_gpt(), trained, at::kCPU), corpus);
    const at::Tensor after = corpus_logits(Transformer(grown, start, at::kCPU), corpus);
    QVERIFY((before - after).abs().max().item<double>() < 1e-5);
    // A source of another width is refused, naming the tensor and both shapes.
    GptConfig wider = grown;
    wider.dim = 128;
    EXPECT_ERROR(train_target(wider, params, source + "-wide", corpus, {}, [](const std::string&) {}),
                 "tensor 'cls_embedding.cap_proj.fc1.weight' has shape [64, 32], this model's is [128, 32]");
  }

  void grown_blocks_train_at_their_own_rate() {
    // Two runs grown by two blocks from one source take one step, the second with the grown tensors at 10 x the rate.
    // The grown blocks start as the identity, so both runs see the same gradients: the learned tensors take the same
    // step, and the grown output projections (zero at the start) go ten times as far.
    const std::string source = dir_.path().toStdString() + "/shallow";
    const TokenizedCorpus corpus = small_corpus(16);
    const auto quiet = [](const std::string&) {};
    train_target(tiny_gpt(), short_run(3, 4, 100), source, corpus, {}, quiet);
    GptConfig grown = tiny_gpt();
    grown.n_layer = tiny_gpt().n_layer + 2;
    TargetTrainParams params = short_run(1, 4, 100);
    params.init_from = source;
    const TensorMap one_rate = train_target(grown, params, source + "-one-rate", corpus, {}, quiet);
    params.grown_lr_scale = 10;
    const TensorMap own_rate = train_target(grown, params, source + "-own-rate", corpus, {}, quiet);
    const std::string grown_wo = "layers." + std::to_string(tiny_gpt().n_layer) + ".attention.wo.weight";
    const double ratio = own_rate.at(grown_wo).abs().mean().item<double>() / one_rate.at(grown_wo).abs().mean().item<double>();
    QVERIFY2(std::abs(ratio - 10) < 0.01, std::to_string(ratio).c_str());
    for (const std::string name : {"layers.0.attention.wo.weight", "layers.1.feed_forward.w2.weight", "tok_embeddings.weight"})
      // The same step to a thousandth of its size (1e-3): Adam divides each gradient by its own magnitude, so float
      // rounding in the two runs' backward passes moves near-zero gradients' steps by up to ~2e-7.
      QVERIFY2(at::allclose(own_rate.at(name), one_rate.at(name), 0, 1e-6), name.c_str());
    // Its rate is part of the run: resuming at another is refused, naming the one to use; no source, no grown tensors.
    params.schedule.steps = 2;
    params.grown_lr_scale = 1;
    EXPECT_ERROR(train_target(grown, params, source + "-own-rate", corpus, {}, quiet), "resume it with --grown-lr-scale 10");
    params.init_from.clear();
    params.grown_lr_scale = 10;
    EXPECT_ERROR(train_target(grown, params, source + "-nothing", corpus, {}, quiet), "needs a run to grow from (--init-from)");
  }

  void stop_at_ends_early_on_the_unchanged_schedule() {
    const std::string run = dir_.path().toStdString() + "/stop-at";
    TargetTrainParams params = short_run(8, 2, 100);
    params.stop_at = 3;
    train_target(tiny_gpt(), params, run, small_corpus(4), {}, [](const std::string&) {});
    CheckpointState state;
    QVERIFY(read_checkpoint_state(run, state));
    QCOMPARE(state.step, 3);
    std::ifstream in(run + "/log.csv");
    std::string header, row;
    std::getline(in, header);
    QCOMPARE(header, std::string("step,seconds,loss,lr,grad_norm,held_out_loss"));
    QVERIFY(std::getline(in, row));  // the checkpoint row of step 3: lr of an 8-step schedule at step index 2
    QVERIFY(row.rfind("3,", 0) == 0);
    std::vector<double> fields;
    for (std::size_t start = 0, comma; start <= row.size(); start = comma + 1) {
      comma = row.find(',', start);
      if (comma == std::string::npos) comma = row.size();
      fields.push_back(std::stod(row.substr(start, comma - start)));
    }
    QVERIFY(std::abs(fields[3] - params.schedule.lr_at(2)) < 1e-8);  // the log keeps 6 significant digits
    QVERIFY(std::abs(fields[3] - params.schedule.lr_at(2)) < std::abs(params.schedule.lr_at(2) - TrainSchedule{3, 1, 1e-3, 0.1}.lr_at(2)));
  }

  void resumed_log_drops_rows_after_the_checkpoint_and_continues_the_clock() {
    const std::string run = dir_.path().toStdString() + "/log-run";
    {
      TrainingLog first(run, {"loss"}, 10, CheckpointState{});
      for (int step = 1; step <= 5; ++step) first.row(step, {1.0 / step});
    }
    CheckpointState checkpoint{3, {{TrainingLog::kTrainingSecondsKey, 100.0}}};
    {
      TrainingLog resumed(run, {"loss"}, 10, checkpoint);
      QVERIFY(resumed.training_seconds() >= 100.0);
      resumed.row(4, {0.9});
    }
    std::ifstream in(run + "/log.csv");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    QCOMPARE(int(lines.size()), 5);  // header, steps 1-3 of the first run, step 4 of the resumed one
    QCOMPARE(lines[0], std::string("step,seconds,loss"));
    QVERIFY(lines[3].rfind("3,", 0) == 0);
    QVERIFY(lines[4].rfind("4,", 0) == 0);
    QVERIFY(std::stod(lines[4].substr(2)) >= 100.0);
  }
};

QTEST_GUILESS_MAIN(TestTraining)
#include "test_training.moc"
