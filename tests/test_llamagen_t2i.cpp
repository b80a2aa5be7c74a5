// LlamaGen text-to-image against the official code's outputs (tests/fixtures/llamagen-t2i): SentencePiece ids raw
// and after LlamaGen's caption cleaning, the T5 encoder from all four weight layouts, the converted T2I bundle's
// greedy tokens, log-probabilities and image, and refusals of bad folders and checkpoints.
#include <QImage>
#include <c10/core/InferenceMode.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "speculum.h"
#include "io/bundle.h"
#include "io/safetensors.h"
#include "io/t5_folder.h"
#include "models/drafter.h"
#include "models/t5_captions.h"
#include "models/t5_encoder.h"
#include "models/tensor_io.h"
#include "models/transformer.h"
#include "sampling/distribution.h"
#include "llamagen_reference.h"
#include "test_helpers.h"
#include "text/caption_cleaning.h"
#include "text/t5_tokenizer.h"

using namespace speculum;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) { return std::string(SPECULUM_TEST_FIXTURES) + "/llamagen-t2i/" + name; }

at::Tensor reference_tensor(const SafetensorsFile& file, const std::string& name) {
  const TensorInfo* t = file.find(name);
  if (!t) throw Error("reference tensor '" + name + "' missing");
  return at::from_blob(const_cast<std::uint8_t*>(file.data(*t)), t->shape, to_scalar_type(t->dtype)).clone();
}

ConvertParams t2i_params(const std::string& out) {
  ConvertParams p;
  p.gpt_path = fixture("t2i_tiny.pt");
  p.vq_path = std::string(SPECULUM_TEST_FIXTURES) + "/llamagen/vq_tiny.pt";
  p.t5_dir = fixture("t5_tiny");
  p.out_dir = out;
  p.overrides = {{"n_head", "4"}, {"image_size", "32"}};  // dim 32 is no published size; the images are 32 px
  return p;
}

// A folder holding the config, the tokenizer and only the listed weight files of `from`, so one layout is read.
std::string folder_with(const std::string& dir, const std::string& from, const std::vector<std::string>& weights) {
  fs::create_directories(dir);
  for (const std::string& name : std::vector<std::string>{"config.json", "spiece.model"})
    fs::copy_file(fixture("t5_tiny/" + name), dir + "/" + name);
  for (const std::string& name : weights) fs::copy_file(fixture(from + "/" + name), dir + "/" + name);
  return dir;
}

double max_abs(const at::Tensor& a, const at::Tensor& b) { return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>(); }

}  // namespace

class TestLlamaGenT2i : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  nlohmann::json ref_ = nlohmann::json::parse(test::read_bytes(fixture("reference.json")));
  std::string bundle_;

  // A copy of the converted bundle with LANTERN's drafter installed (made once).
  std::string with_lantern() {
    const std::string b = dir_.filePath("with-lantern").toStdString();
    if (!fs::exists(b)) {
      fs::copy(bundle_, b);
      import_lantern_drafter({fixture("lantern_drafter_tiny"), b});
    }
    return b;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    bundle_ = dir_.filePath("t2i").toStdString();
    const ConvertReport report = convert_llamagen(t2i_params(bundle_));
    QVERIFY(!fs::exists(bundle_ + ".partial"));
    bool said = false;
    for (const auto& line : report.lines) said |= line.find("120 caption slots of width 32") != std::string::npos;
    QVERIFY(said);
  }

  void sentencepiece_ids_equal_the_reference_for_every_prompt() {
    const T5Tokenizer tokenizer = T5Tokenizer::open(fixture("t5_tiny/spiece.model"));
    for (const auto& p : ref_["tokenizer"]["prompts"]) {
      const std::string text = p["text"];
      QCOMPARE(tokenizer.encode(text), p["sp_ids"].get<std::vector<int>>());
      QCOMPARE(tokenizer.pieces(text), p["sp_pieces"].get<std::vector<std::string>>());
      const TokenizedCaption raw = tokenizer.tokenize(text, 120);
      QCOMPARE(raw.ids, p["t5_ids"].get<std::vector<int>>());
      QCOMPARE(raw.dropped_text.empty(), !p["truncated"].get<bool>());
      const std::string cleaned = llamagen_clean_caption(text);
      QCOMPARE(cleaned, p["llamagen_cleaned_text"].get<std::string>());
      QCOMPARE(tokenizer.tokenize(cleaned, 120).ids, p["llamagen_ids"].get<std::vector<int>>());
    }
  }

  void caption_cleaning_follows_llamagen_on_more_cases() {
    // Each case exercises one rule of clean_caption (worked out by hand from language/t5.py).
    QCOMPARE(llamagen_clean_caption("A+photo%20of+a+CAT"), std::string("a photo of a cat"));  // unquote_plus, lower
    QCOMPARE(llamagen_clean_caption("the “best” dog"), std::string("the \"best\" dog"));
    QCOMPARE(llamagen_clean_caption("this-is-my-cute-cat"), std::string("this is my cute cat"));  // > 3 joiners
    QCOMPARE(llamagen_clean_caption("a dog... running"), std::string("a dog running"));
    QCOMPARE(llamagen_clean_caption("size 1920x1080 photo"), std::string("size photo"));
    QCOMPARE(llamagen_clean_caption("free shipping on cat toys"), std::string("on cat toys"));
    QCOMPARE(llamagen_clean_caption("'quoted'"), std::string("quoted"));
  }

  void t5_hidden_states_match_from_all_four_layouts() {
    c10::InferenceMode inference;
    const SafetensorsFile tensors = SafetensorsFile::open(fixture("reference_tensors.safetensors"));
    const std::string base = dir_.filePath("layouts").toStdString();
    const std::vector<std::pair<std::string, T5WeightLayout>> folders = {
        {folder_with(base + "/st", "t5_tiny", {"model.safetensors"}), T5WeightLayout::Safetensors},
        {folder_with(base + "/bin", "t5_tiny", {"pytorch_model.bin"}), T5WeightLayout::TorchBin},
        {folder_with(base + "/st-shards", "t5_tiny_sharded",
                     {"model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}),
         T5WeightLayout::ShardedSafetensors},
        {folder_with(base + "/bin-shards", "t5_tiny_sharded",
                     {"pytorch_model.bin.index.json", "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"}),
         T5WeightLayout::ShardedTorchBin},
    };
    for (const auto& [dir, layout] : folders) {
      const T5Folder folder = open_t5_folder(dir);
      QCOMPARE(folder.layout, layout);
      const T5Encoder encoder(folder, at::kCPU);
      for (const std::string set : {"t5.llamagen", "t5.raw"}) {
        const at::Tensor mask = reference_tensor(tensors, set + ".attention_mask");
        const at::Tensor hidden = encoder.encode(reference_tensor(tensors, set + ".input_ids"), mask);
        const at::Tensor expected = reference_tensor(tensors, set + ".last_hidden_state");
        const at::Tensor valid = mask.to(at::kBool).unsqueeze(-1);
        const double worst = max_abs(hidden.masked_select(valid), expected.masked_select(valid));
        QVERIFY2(worst < 1e-4, qPrintable(QString::fromStdString(dir + " " + set) + QString(": max |d| %1").arg(worst)));
      }
    }
  }

  // A full T5ForConditionalGeneration checkpoint also holds the decoder and lm_head: they are ignored and reported.
  void a_full_t5_checkpoint_loads_its_encoder_and_reports_the_rest() {
    c10::InferenceMode inference;
    const std::string dir = folder_with(dir_.filePath("full-t5").toStdString(), "t5_tiny", {});
    const SafetensorsFile encoder = SafetensorsFile::open(fixture("t5_tiny/model.safetensors"));
    std::vector<TensorToWrite> tensors;
    for (const TensorInfo& t : encoder.tensors()) tensors.push_back({t.name, t.dtype, t.shape, encoder.data(t), t.nbytes()});
    const std::vector<float> extra(300 * 32, 0.5f);
    tensors.push_back({"lm_head.weight", DType::F32, {300, 32}, extra.data(), extra.size() * 4});
    tensors.push_back({"decoder.final_layer_norm.weight", DType::F32, {32}, extra.data(), 32 * 4});
    write_safetensors(dir + "/model.safetensors", tensors);
    std::vector<std::string> ignored;
    const T5Encoder with_decoder(open_t5_folder(dir), at::kCPU, &ignored);
    QCOMPARE(ignored, (std::vector<std::string>{"decoder.final_layer_norm.weight", "lm_head.weight"}));
    const T5Encoder plain(open_t5_folder(fixture("t5_tiny")), at::kCPU);
    const at::Tensor ids = at::arange(1, 9, at::kLong).unsqueeze(0), mask = at::ones({1, 8}, at::kLong);
    QVERIFY(at::equal(with_decoder.encode(ids, mask), plain.encode(ids, mask)));
  }

  void caption_inputs_equal_what_sample_t2i_passes_to_generate() {
    c10::InferenceMode inference;
    const SafetensorsFile tensors = SafetensorsFile::open(fixture("reference_tensors.safetensors"));
    const T5Captions captions(open_t5_folder(fixture("t5_tiny")), at::kCPU, /*clean=*/true, 120);
    for (int i = 0; i < 3; ++i) {
      const EncodedCaption c = captions.encode(ref_["tokenizer"]["prompts"][i]["text"]);
      const std::string name = "gpt.prompt" + std::to_string(i);
      const double worst = max_abs(c.features, reference_tensor(tensors, name + ".c_indices"));
      QVERIFY2(worst < 1e-4, qPrintable(QString("prompt %1: max |d| %2").arg(i).arg(worst)));
      const at::Tensor mask = reference_tensor(tensors, name + ".c_emb_masks");
      for (int row = 0; row < 120; ++row) QCOMPARE(int(c.slots[static_cast<std::size_t>(row)]), int(mask[row].item<std::int64_t>()));
    }
  }

  void greedy_tokens_equal_the_official_generate() {
    const auto engine = Engine::load({bundle_, "cpu", 1});
    QVERIFY(engine->info().free_text);
    QVERIFY(engine->info().text_vocab.empty());
    QCOMPARE(engine->info().max_prompt_words, 120);
    QCOMPARE(engine->info().sampling.cfg_scale, 7.5f);  // sample_t2i.py's default
    for (const auto& run : ref_["runs"]) {
      GenerateParams p;
      p.prompt = run["prompt"];
      p.sampling.cfg_scale = run["cfg_scale"];
      p.sampling.top_k = 1;
      for (const char* method : {"ar", "sjd"}) {
        p.method = method;
        QCOMPARE(engine->generate(p).tokens, run["tokens"].get<std::vector<int>>());
      }
    }
    // Without a drafter, the tree methods say how to get LANTERN's; the others that Speculum cannot train them yet.
    QCOMPARE(engine->info().methods, (std::vector<std::string>{"ar", "sjd"}));
    GenerateParams p;
    p.prompt = "a cat";
    p.method = "eagle";
    EXPECT_ERROR(engine->generate(p), "import LANTERN's: speculum-cli convert lantern-drafter --drafter DIR --bundle");
    for (const char* method : {"ssd", "mulo"}) {
      p.method = method;
      EXPECT_ERROR(engine->generate(p), "cannot train this part for a T5-conditioned bundle yet");
    }
  }

  void log_probabilities_match_within_1e4() {
    c10::InferenceMode inference;
    const BundleManifest m = read_manifest(bundle_);
    const Transformer model(m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), at::kCPU), at::kCPU);
    const T5Captions captions(open_t5_folder(m.t5_folder()), at::kCPU, true, 120);
    for (const auto& run : ref_["runs"]) {
      const float cfg = run["cfg_scale"];
      const EncodedCaption caption = captions.encode(run["prompt"]);
      const double worst = test::worst_logp_error(model, model.caption_prefix(caption.features, caption.slots, cfg > 1 ? 2 : 1), run);
      QVERIFY2(worst < 1e-4, qPrintable(QString("max |d log p| %1 at prompt %2, cfg %3").arg(worst).arg(run["prompt_index"].get<int>()).arg(cfg)));
    }
  }

  void decoded_image_matches_within_one_level() {
    const auto engine = Engine::load({bundle_, "cpu", 1});
    std::vector<int> tokens;
    for (const auto& run : ref_["runs"])
      if (run["prompt_index"] == 0 && run["cfg_scale"] == 4.0) tokens = run["tokens"].get<std::vector<int>>();
    const test::LevelDifferences d = test::compare_with_png(engine->decode(tokens), fixture("decoded_prompt0_cfg4.png"));
    QCOMPARE(d.worse, 0);
    QVERIFY(d.off_by_one * 100 <= d.values);
  }

  void long_prompts_warn_what_is_cut() {
    const auto engine = Engine::load({bundle_, "cpu", 1});
    const auto& long_prompt = ref_["tokenizer"]["prompts"][6];
    const std::string warning = engine->prompt_warning(long_prompt["text"]);
    const auto pieces = long_prompt["llamagen_sp_pieces"].size();  // of the cleaned text, which is what T5 reads
    QVERIFY2(warning.find("is " + std::to_string(pieces + 1) + " T5 tokens") != std::string::npos, warning.c_str());
    QVERIFY(warning.find("so this is cut: '") != std::string::npos);
    QVERIFY(engine->prompt_warning("a red cat").empty());
    QVERIFY(engine->check_prompt("any text at all, even words no vocabulary has: zyxx").empty());
    QVERIFY(engine->check_prompt(std::string(2001, 'a')).find("the prompt is 2001 bytes; the limit is 2000") != std::string::npos);
  }

  void the_bundle_checks_its_t5_folder_at_load() {
    const std::string copy = dir_.filePath("moved").toStdString();
    fs::copy(bundle_, copy);
    EngineParams params{copy, "cpu", 1};
    params.t5_folder = dir_.filePath("nowhere").toStdString();
    EXPECT_ERROR(Engine::load(params), "is not a folder");
    // Another tokenizer: the fingerprint differs.
    const std::string other = dir_.filePath("other-t5").toStdString();
    fs::copy(fixture("t5_tiny"), other);
    fs::permissions(other, fs::perms::owner_all, fs::perm_options::add);
    fs::permissions(other + "/spiece.model", fs::perms::owner_write, fs::perm_options::add);
    test::write_bytes(other + "/spiece.model", test::read_bytes(other + "/spiece.model") + " ");
    params.t5_folder = other;
    EXPECT_ERROR(Engine::load(params), "is not the encoder bundle");
  }

  // LANTERN's drafter imported: its caption-row features (LANTERN's padding convention), hidden rows and logits on
  // the recorded step within 1e-4 of LANTERN's own code, from LANTERN's features.
  void lantern_drafter_matches_lantern_on_the_recorded_step() {
    const std::string b = with_lantern();
    c10::InferenceMode inference;
    const BundleManifest m = read_manifest(b);
    const DrafterEntry& entry = m.drafters.at("eagle");
    QVERIFY(entry.convention == DrafterConvention::Lantern);
    QCOMPARE(entry.norm_eps, 1e-6);
    const Transformer model(m.target, load_tensors(SafetensorsFile::open(m.target_path()), gpt_tensor_specs(m.target), at::kCPU), at::kCPU);
    QCOMPARE(entry.rope_grid, 16);  // input_type t2i
    const Drafter drafter(model, load_tensors(SafetensorsFile::open(m.drafter_path("eagle")), drafter_tensor_specs(m.target, entry.convention), at::kCPU),
                          entry.convention, entry.norm_eps, entry.rope_grid);
    const SafetensorsFile tensors = SafetensorsFile::open(fixture("reference_tensors.safetensors"));
    const at::Tensor features = reference_tensor(tensors, "lantern.features_lantern_base");  // [2, 124, 32]
    const T5Captions captions(open_t5_folder(m.t5_folder()), at::kCPU, true, 120);
    const EncodedCaption caption = captions.encode(ref_["tokenizer"]["prompts"][ref_["lantern"]["prompt_index"].get<int>()]["text"]);
    const at::Tensor prefix = drafter.prefix_features(model.caption_prefix(caption.features, caption.slots, 2));
    const double prefix_error = max_abs(prefix, features.narrow(1, 0, 120));
    QVERIFY2(prefix_error < 1e-4, qPrintable(QString("caption-row features: max |d| %1").arg(prefix_error)));

    KVCache cache = drafter.make_cache(2, 0);
    drafter.read_prefix(features, cache);
    const at::Tensor ids = reference_tensor(tensors, "lantern.drafter_input_ids");
    const at::Tensor hidden = drafter.forward(ids.narrow(0, 119, 5), features.narrow(1, 119, 5), {120, 121, 122, 123, 124}, {}, cache);
    const double hidden_error = max_abs(hidden, reference_tensor(tensors, "lantern.drafter_hidden_rows"));
    QVERIFY2(hidden_error < 1e-4, qPrintable(QString("drafter rows: max |d| %1").arg(hidden_error)));
    const at::Tensor logits = drafter.logits(hidden);
    QVERIFY(max_abs(logits[0], reference_tensor(tensors, "lantern.drafter_logits_cond")) < 1e-4);
    QVERIFY(max_abs(logits[1], reference_tensor(tensors, "lantern.drafter_logits_uncond")) < 1e-4);
    const double guided_error = max_abs(cfg_combine(logits, ref_["lantern"]["cfg"].get<float>()), reference_tensor(tensors, "lantern.drafter_logits_guided"));
    QVERIFY2(guided_error < 1e-4, qPrintable(QString("guided logits: max |d| %1").arg(guided_error)));
  }

  // Lossless: greedy eagle with the imported drafter commits exactly the official greedy tokens. (Top-k 1 makes the
  // drafts top-1 too; this random drafter's top-1 misses the recorded next tokens, so few drafts are accepted.)
  void greedy_eagle_with_the_lantern_drafter_gives_the_official_tokens() {
    const auto engine = Engine::load({with_lantern(), "cpu", 1});
    const auto& methods = engine->info().methods;
    QVERIFY(std::find(methods.begin(), methods.end(), "eagle") != methods.end());
    for (const auto& run : ref_["runs"]) {
      GenerateParams p;
      p.prompt = run["prompt"];
      p.sampling.cfg_scale = run["cfg_scale"];
      p.sampling.top_k = 1;
      p.method = "eagle";
      const GenerateResult result = engine->generate(p);
      QCOMPARE(result.tokens, run["tokens"].get<std::vector<int>>());
    }
  }

  void lantern_drafters_that_do_not_fit_are_refused() {
    const std::string c2i = dir_.filePath("c2i").toStdString();
    ConvertParams p;
    p.gpt_path = std::string(SPECULUM_TEST_FIXTURES) + "/llamagen/c2i_tiny.pt";
    p.vq_path = std::string(SPECULUM_TEST_FIXTURES) + "/llamagen/vq_tiny.pt";
    p.out_dir = c2i;
    p.overrides = {{"n_head", "4"}, {"image_size", "32"}};
    convert_llamagen(p);
    EXPECT_ERROR(import_lantern_drafter({fixture("lantern_drafter_tiny"), c2i}), "is not a LlamaGen text-to-image bundle");
    const std::string wide = dir_.filePath("wide-drafter").toStdString();
    fs::create_directories(wide);
    fs::copy_file(fixture("lantern_drafter_tiny/pytorch_model.bin"), wide + "/pytorch_model.bin");
    std::string config = test::read_bytes(fixture("lantern_drafter_tiny/config.json"));
    const std::string width = "\"hidden_size\": 32";
    config.replace(config.find(width), width.size(), "\"hidden_size\": 64");
    test::write_bytes(wide + "/config.json", config);
    const std::string before = test::read_bytes(bundle_ + "/speculum.json");
    EXPECT_ERROR(import_lantern_drafter({wide, bundle_}), wide + "/config.json: field 'hidden_size' is 64 but the bundle's target has width 32");
    QCOMPARE(test::read_bytes(bundle_ + "/speculum.json"), before);
    QVERIFY(!fs::exists(bundle_ + "/eagle-lantern.safetensors"));
  }

  void bad_folders_and_checkpoints_are_refused_naming_the_file() {
    const std::string base = dir_.filePath("bad").toStdString();
    const std::string no_spiece = base + "/no-spiece";
    fs::create_directories(no_spiece);
    fs::copy_file(fixture("t5_tiny/config.json"), no_spiece + "/config.json");
    fs::copy_file(fixture("t5_tiny/model.safetensors"), no_spiece + "/model.safetensors");
    EXPECT_ERROR(open_t5_folder(no_spiece), no_spiece + "/spiece.model");
    const std::string no_config = base + "/no-config";
    fs::create_directories(no_config);
    fs::copy_file(fixture("t5_tiny/spiece.model"), no_config + "/spiece.model");
    EXPECT_ERROR(open_t5_folder(no_config), no_config + "/config.json");
    const std::string missing_shard = folder_with(base + "/missing-shard", "t5_tiny_sharded",
                                                  {"model.safetensors.index.json", "model-00001-of-00002.safetensors"});
    EXPECT_ERROR(open_t5_folder(missing_shard), "names the shard 'model-00002-of-00002.safetensors', which is not in the folder");
    const std::string escaping = folder_with(base + "/escaping-index", "t5_tiny", {});
    test::write_bytes(escaping + "/model.safetensors.index.json", R"({"weight_map": {"shared.weight": "../model.safetensors"}})");
    EXPECT_ERROR(open_t5_folder(escaping), "shard '../model.safetensors' must be a file name inside the folder");
    const std::string not_t5 = folder_with(base + "/not-t5", "t5_tiny", {"model.safetensors"});
    fs::permissions(not_t5 + "/config.json", fs::perms::owner_write, fs::perm_options::add);
    test::write_bytes(not_t5 + "/config.json", R"({"model_type": "bert", "vocab_size": 300})");
    EXPECT_ERROR(open_t5_folder(not_t5), "field 'model_type' is 'bert'");

    ConvertParams p = t2i_params(base + "/out");
    p.t5_dir.clear();
    EXPECT_ERROR(convert_llamagen(p), "give its T5 encoder with --t5");
    p = t2i_params(base + "/out");
    p.gpt_path = std::string(SPECULUM_TEST_FIXTURES) + "/llamagen/c2i_tiny.pt";
    EXPECT_ERROR(convert_llamagen(p), "is a class-conditional LlamaGen GPT (no cls_embedding.cap_proj): it takes no --t5");
    p = t2i_params(base + "/out");
    p.t5_dir = no_spiece;
    EXPECT_ERROR(convert_llamagen(p), "spiece.model");
    p = t2i_params(base + "/out");
    p.overrides.push_back({"num_classes", "10"});
    EXPECT_ERROR(convert_llamagen(p), "--set num_classes: a text-to-image GPT has no class table");
    QVERIFY(!fs::exists(base + "/out") && !fs::exists(base + "/out.partial"));
  }
};

QTEST_GUILESS_MAIN(TestLlamaGenT2i)
#include "test_llamagen_t2i.moc"
