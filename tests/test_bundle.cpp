// Bundles: a random bundle loads; each kind of damage to the manifest or the weights is an Error that
// names the field or tensor at fault.
#include <filesystem>
#include <cstring>
#include <limits>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include "io/bundle.h"
#include "io/safetensors.h"
#include "speculum.h"
#include "speculum_tools.h"
#include "test_helpers.h"

using namespace speculum;
using speculum::test::read_bytes;
using speculum::test::write_bytes;

class TestBundle : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  int counter_ = 0;

  // A fresh copy of a tiny random bundle, so each case can damage its own.
  std::string fresh_bundle(const std::string& condition = "text", bool fp16 = false) {
    const std::string dir = tmp_.path().toStdString() + "/b" + std::to_string(counter_++);
    RandomBundleParams p;
    p.out_dir = dir;
    p.preset = "tiny";
    p.condition = condition;
    p.fp16 = fp16;
    create_random_bundle(p);
    return dir;
  }

  void edit_manifest(const std::string& dir, const std::function<void(nlohmann::json&)>& edit) {
    auto j = nlohmann::json::parse(read_bytes(dir + "/speculum.json"));
    edit(j);
    write_bytes(dir + "/speculum.json", j.dump());
  }

  // Rewrites `file` with `edit` applied to the list of tensors (which borrow the original mapping).
  void edit_weights(const std::string& file, const std::function<void(std::vector<TensorToWrite>&)>& edit) {
    const std::string copy = file + ".orig";
    std::filesystem::copy_file(file, copy);
    const SafetensorsFile src = SafetensorsFile::open(copy);
    std::vector<TensorToWrite> tensors;
    for (const auto& t : src.tensors()) tensors.push_back({t.name, t.dtype, t.shape, src.data(t), t.nbytes()});
    edit(tensors);
    write_safetensors(file, tensors);
  }

  EngineParams params_for(const std::string& dir) {
    EngineParams p;
    p.bundle_dir = dir;
    p.device = "cpu";
    return p;
  }

 private Q_SLOTS:
  void random_bundle_loads() {
    const auto engine = Engine::load(params_for(fresh_bundle()));
    const ModelInfo& info = engine->info();
    QCOMPARE(info.grid_rows, 8);
    QCOMPARE(info.grid_cols, 8);
    QCOMPARE(info.image_size, 16);
    QCOMPARE(info.vocab_size, 256);
    QVERIFY(info.text_conditioned);
    QCOMPARE(info.max_prompt_words, 16);
    QVERIFY(info.target_parameters > 0);
    QCOMPARE(info.device, std::string("cpu"));
  }

  void fp16_and_class_bundles_load() {
    QVERIFY(!Engine::load(params_for(fresh_bundle("text", true)))->info().classes.size());
    QCOMPARE(Engine::load(params_for(fresh_bundle("class")))->info().classes.size(), std::size_t(10));
  }

  void missing_manifest() { EXPECT_ERROR(Engine::load(params_for(tmp_.path().toStdString() + "/none")), "cannot read manifest"); }

  void missing_tensor() {
    const std::string dir = fresh_bundle();
    edit_weights(dir + "/target.safetensors", [](auto& tensors) {
      std::erase_if(tensors, [](const TensorToWrite& t) { return t.name == "layers.1.feed_forward.w2.weight"; });
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "missing tensor 'layers.1.feed_forward.w2.weight'");
  }

  void wrong_shape_names_tensor_and_shapes() {
    const std::string dir = fresh_bundle();
    edit_manifest(dir, [](auto& j) { j["target"]["dim"] = 128; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "has shape [64, 64], the manifest implies [128, 64]");
  }

  void wrong_dtype() {
    const std::string dir = fresh_bundle();
    edit_weights(dir + "/vq.safetensors", [](auto& tensors) {
      for (auto& t : tensors)
        if (t.name == "decoder.conv_out.bias") t.dtype = DType::I32;  // same byte count
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "'decoder.conv_out.bias' has dtype I32 (allowed for weights");
  }

  void extra_tensors_are_tolerated() {
    const std::string dir = fresh_bundle();
    const float extra = 3;
    edit_weights(dir + "/target.safetensors",
                 [&](auto& tensors) { tensors.push_back({"freqs_cis", DType::F32, {1}, &extra, 4}); });
    std::vector<std::string> warnings;
    Engine::load(params_for(dir), [&](LogLevel level, const std::string& line) {
      if (level == LogLevel::Warn) warnings.push_back(line);
    });
    QCOMPARE(warnings.size(), std::size_t(1));
    QVERIFY(warnings[0].find("freqs_cis") != std::string::npos);
  }

  void truncated_weights() {
    const std::string dir = fresh_bundle();
    const std::string bytes = read_bytes(dir + "/vq.safetensors");
    write_bytes(dir + "/vq.safetensors", bytes.substr(0, bytes.size() / 2));
    EXPECT_ERROR(Engine::load(params_for(dir)), "file truncated?");
  }

  void class_names_are_non_empty_printable_and_unique() {
    const std::string dir = fresh_bundle("class");
    edit_manifest(dir, [](auto& j) { j["condition"]["classes"][3] = j["condition"]["classes"][1]; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "condition.classes[3] 'square' repeats condition.classes[1]");
    edit_manifest(dir, [](auto& j) { j["condition"]["classes"][3] = ""; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "condition.classes[3] is empty");
    edit_manifest(dir, [](auto& j) { j["condition"]["classes"][3] = "great white shark"; });  // spaces are fine in a class
    QCOMPARE(Engine::load(params_for(dir))->info().classes[3], std::string("great white shark"));
  }

  void manifest_field_errors() {
    const std::string dir = fresh_bundle();
    edit_manifest(dir, [](auto& j) { j["target"]["n_layer"] = "two"; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "field 'n_layer' must be an integer");
    edit_manifest(dir, [](auto& j) {
      j["target"]["n_layer"] = 2;
      j["target"].erase("n_head");
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "speculum.json.target: missing field 'n_head'");
    edit_manifest(dir, [](auto& j) {
      j["target"]["n_head"] = 4;
      j["condition"]["kind"] = "audio";
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "'condition.kind' is 'audio' (allowed: class, text, t5)");
    edit_manifest(dir, [](auto& j) {
      j["condition"]["kind"] = "text";
      j["target"]["vocab_size"] = 512;
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "target.vocab_size 512 differs from tokenizer.codebook_size 256");
    edit_manifest(dir, [](auto& j) {
      j["target"]["vocab_size"] = 256;
      j["target"]["n_head"] = 3;
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "dim 64 is not divisible by n_head 3");
    edit_manifest(dir, [](auto& j) {
      j["target"]["n_head"] = 4;
      j["image"]["size"] = 32;
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "image.size 32 is not image.grid times");
    edit_manifest(dir, [](auto& j) {
      j["image"]["size"] = 16;
      j["format"] = "speculum-bundle/9";
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "format 'speculum-bundle/9' is not supported");
  }

  // The prompt guide survives write_manifest, reaches ModelInfo, and may only suggest prompts the model reads.
  void prompt_guide_round_trips_and_its_examples_must_be_readable() {
    const std::string dir = fresh_bundle();
    const std::string word = Engine::load(params_for(dir))->info().text_vocab.at(1);
    BundleManifest m = read_manifest(dir);
    m.prompt_guide = PromptGuide{"WORD WORD", {word, word + " " + word}, "by hand, in a test"};
    write_manifest(m, dir);
    const auto engine = Engine::load(params_for(dir));
    QCOMPARE(engine->info().prompt_grammar, std::string("WORD WORD"));
    QCOMPARE(engine->info().example_prompts, (std::vector<std::string>{word, word + " " + word}));
    QCOMPARE(engine->info().examples_chosen_by, std::string("by hand, in a test"));
    edit_manifest(dir, [](auto& j) { j["prompt_guide"]["examples"] = {"zebra quokka"}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "prompt_guide example 'zebra quokka': ");
    edit_manifest(dir, [](auto& j) { j["prompt_guide"]["examples"] = std::vector<std::string>(33, "a"); });
    EXPECT_ERROR(Engine::load(params_for(dir)), "prompt_guide.examples holds 33 prompts (at most 32)");
    edit_manifest(dir, [](auto& j) { j["prompt_guide"]["examples"] = {std::string(500, 'a')}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "prompt_guide: a text of 500 characters (at most 400)");
    edit_manifest(dir, [](auto& j) { j["prompt_guide"].erase("grammar"); });
    EXPECT_ERROR(Engine::load(params_for(dir)), "missing field 'grammar'");
  }

  // Hostile manifests and weights: grids that overflow or would start a million-token run, a weights path out of
  // the bundle, NaN weights, a data section the header does not tile, repeated keys, and a FIFO for weights.
  void hostile_bundles_are_refused_naming_the_problem() {
    std::string dir = fresh_bundle();
    edit_manifest(dir, [](auto& j) { j["image"]["grid"] = {4294967312ull, 16}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "field 'grid' must be an array of integers, each at most 2147483647");
    edit_manifest(dir, [](auto& j) { j["image"]["grid"] = {65536, 65536}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "each from 1 to 128 (the grid-side limit)");
    edit_manifest(dir, [](auto& j) { j["image"]["grid"] = {1000, 1000}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "(the grid-side limit)");
    dir = fresh_bundle();
    edit_manifest(dir, [](auto& j) { j["target"]["weights"] = "../../../../etc/passwd"; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "'../../../../etc/passwd' (a 'weights' field) must be a file name inside the bundle folder");
    edit_manifest(dir, [](auto& j) { j["target"]["weights"] = "/etc/passwd"; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "must be a file name inside the bundle folder");

    dir = fresh_bundle();
    edit_weights(dir + "/vq.safetensors", [](std::vector<TensorToWrite>& tensors) {
      static std::vector<float> poisoned;
      for (auto& t : tensors)
        if (t.name == "decoder.conv_out.bias") {
          poisoned.assign(t.nbytes / sizeof(float), std::numeric_limits<float>::quiet_NaN());
          t.data = poisoned.data();
        }
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "vq.safetensors': tensor 'decoder.conv_out.bias' holds NaN or infinite values");

    // A header length one byte short of where the data starts (two padding spaces inserted, the length counting
    // one): every tensor would be read one byte early.
    dir = fresh_bundle();
    std::string bytes = read_bytes(dir + "/target.safetensors");
    std::uint64_t header_length = 0;
    std::memcpy(&header_length, bytes.data(), 8);
    bytes.insert(8 + header_length, "  ");
    ++header_length;
    std::memcpy(bytes.data(), &header_length, 8);
    write_bytes(dir + "/target.safetensors", bytes);
    EXPECT_ERROR(Engine::load(params_for(dir)), "target.safetensors': the data section holds");
    // Repeated keys in a header or manifest: refused, not "the last wins".
    dir = fresh_bundle();
    std::string manifest = read_bytes(dir + "/speculum.json");
    manifest.insert(manifest.find('{') + 1, "\"name\": \"first\", ");
    write_bytes(dir + "/speculum.json", manifest);
    EXPECT_ERROR(Engine::load(params_for(dir)), "the key 'name' appears twice in one object");
    // A FIFO where the weights should be: refused at once instead of blocking in open().
    dir = fresh_bundle();
    std::filesystem::remove(dir + "/vq.safetensors");
    QCOMPARE(::mkfifo((dir + "/vq.safetensors").c_str(), 0600), 0);
    EXPECT_ERROR(Engine::load(params_for(dir)), "refusing to read weights '" + dir + "/vq.safetensors': it is a FIFO");
    std::filesystem::remove(dir + "/speculum.json");
    std::filesystem::create_symlink("/dev/zero", dir + "/speculum.json");
    EXPECT_ERROR(Engine::load(params_for(dir)), "refusing to read manifest");
  }

  void low_res_drafter_grid_and_tensors_are_checked() {
    const std::string dir = fresh_bundle();  // tiny text bundle: 8x8 grid, a 4x4 low-resolution drafter
    QCOMPARE(Engine::load(params_for(dir))->info().low_res_rows, 4);
    edit_manifest(dir, [](auto& j) { j["low_res_drafter"]["grid"] = {3, 3}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "low_res_drafter.grid [3, 3] is not image.grid [8, 8] divided by 2 or 4");
    edit_manifest(dir, [](auto& j) { j["low_res_drafter"]["grid"] = {4, 2}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "divided by 2 or 4 in both directions");
    edit_manifest(dir, [](auto& j) { j["low_res_drafter"]["grid"] = {2, 2}; });  // a factor of 4 (RoPE only: same tensors)
    QCOMPARE(Engine::load(params_for(dir))->info().low_res_cols, 2);
    edit_manifest(dir, [](auto& j) { j["low_res_drafter"]["weights"] = "absent.safetensors"; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "absent.safetensors");
  }

  void architecture_options_need_their_tensors() {
    const std::string dir = fresh_bundle();
    edit_manifest(dir, [](auto& j) { j["target"]["text_encoder_layers"] = 1; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "missing tensor 'text_encoder.position_embeddings.weight' (shape [16, 64])");
    edit_manifest(dir, [](auto& j) {
      j["target"]["text_encoder_layers"] = 0;
      j["target"]["image_positions"] = true;
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "missing tensor 'pos_embeddings.weight' (shape [64, 64])");
    edit_manifest(dir, [](auto& j) {
      j["target"]["image_positions"] = "yes";
    });
    EXPECT_ERROR(Engine::load(params_for(dir)), "image_positions");
  }

  void recommended_sampling_reaches_the_model_info() {
    const std::string dir = fresh_bundle();
    QCOMPARE(Engine::load(params_for(dir))->info().sampling.cfg_scale, SamplingParams{}.cfg_scale);  // written as the defaults
    edit_manifest(dir, [](auto& j) { j.erase("sampling"); });
    QCOMPARE(Engine::load(params_for(dir))->info().sampling.to_string(), SamplingParams{}.to_string());  // absent: the defaults
    edit_manifest(dir, [](auto& j) { j["sampling"] = {{"cfg", 1.5}, {"top_k", 50}}; });
    const SamplingParams s = Engine::load(params_for(dir))->info().sampling;
    QCOMPARE(s.to_string(), std::string("cfg=1.5 temperature=1 top_k=50 top_p=1"));  // absent fields keep the defaults
    BundleManifest m = read_manifest(dir);
    m.sampling.temperature = 0.75f;
    write_manifest(m, dir);
    QCOMPARE(read_manifest(dir).sampling.to_string(), std::string("cfg=1.5 temperature=0.75 top_k=50 top_p=1"));

    edit_manifest(dir, [](auto& j) { j["sampling"]["top_p"] = 0; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "speculum.json: sampling: top-p must be in (0, 1], got 0");
    edit_manifest(dir, [](auto& j) { j["sampling"] = {{"cfg", "strong"}}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "field 'cfg' must be a number");
  }

  void recommended_method_options_fill_what_a_request_leaves_out() {
    const std::string dir = fresh_bundle();
    QVERIFY(Engine::load(params_for(dir))->info().method_options.empty());
    recommend_method_options(dir, "ssd", {{"rounds", 5}, {"early_stop", 0}});
    recommend_method_options(dir, "lantern", {{"delta", 0.3}});
    const auto engine = Engine::load(params_for(dir));
    QCOMPARE(engine->info().method_options.at("ssd").at("rounds"), 5.0);
    QCOMPARE(engine->info().method_options.at("lantern").at("delta"), 0.3);

    GenerateParams p;
    p.prompt = "a red circle above a blue square";
    p.method = "ssd";
    p.seed = 11;
    p.method_options = {{"horizontal", 3}};
    const GenerateResult recommended = engine->generate(p);
    QCOMPARE(recommended.method_options.at("rounds"), 5.0);     // the bundle's, for what the request left out
    QCOMPARE(recommended.method_options.at("horizontal"), 3.0);  // the request's own
    p.method_options = {{"horizontal", 3}, {"rounds", 5}, {"early_stop", 0}};
    QCOMPARE(engine->generate(p).tokens, recommended.tokens);  // the same run as asking for them
    p.method_options = {{"rounds", 0}};
    QCOMPARE(engine->generate(p).method_options.at("rounds"), 0.0);  // the request wins

    QCOMPARE(recommend_method_options(dir, "ssd", {}).count("ssd"), std::size_t(0));  // cleared
    QVERIFY(!Engine::load(params_for(dir))->info().method_options.count("ssd"));
    QVERIFY(Engine::load(params_for(dir))->info().method_options.count("lantern"));

    EXPECT_ERROR(recommend_method_options(dir, "ssd", {{"rounds", 99}}), "rounds = 99");
    EXPECT_ERROR(recommend_method_options(dir, "sjd", {{"window", 4}}), "window is a draft size");
    EXPECT_ERROR(recommend_method_options(dir, "warp", {{"x", 1}}), "unknown method 'warp'");
    edit_manifest(dir, [](auto& j) { j["method_options"] = {{"ssd", {{"rounds", "many"}}}}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "speculum.json: method_options.ssd.rounds must be a finite number");
    edit_manifest(dir, [](auto& j) { j["method_options"] = {{"ssd", {{"turns", 2}}}}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "speculum.json: method_options.ssd: method 'ssd' has no parameter 'turns'");
    edit_manifest(dir, [](auto& j) { j["method_options"] = {{"sjd", {{"window", 4}}}}; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "method_options.sjd: method 'sjd': window is a draft size");
    edit_manifest(dir, [](auto& j) { j["method_options"] = 3; });
    EXPECT_ERROR(Engine::load(params_for(dir)), "field 'method_options' must be an object of methods");
  }

  void hostile_manifests() {
    const std::string dir = fresh_bundle();
    write_bytes(dir + "/speculum.json", "{\"name\": \"\xc3\x28\"}");
    EXPECT_ERROR(Engine::load(params_for(dir)), "not valid UTF-8 JSON");
    write_bytes(dir + "/speculum.json", std::string(50000, '[') + std::string(50000, ']'));
    EXPECT_ERROR(Engine::load(params_for(dir)), "nests deeper than");
    write_bytes(dir + "/speculum.json", "[]");
    EXPECT_ERROR(Engine::load(params_for(dir)), "expected a JSON object");
    write_bytes(dir + "/speculum.json", "");
    EXPECT_ERROR(Engine::load(params_for(dir)), "speculum.json: empty where JSON was expected");
  }

  void unknown_device() {
    EngineParams p = params_for(fresh_bundle());
    p.device = "tpu";
    EXPECT_ERROR(Engine::load(p), "unknown device 'tpu' (allowed: auto, cpu, cuda)");
  }

  void inspect_reports() {
    const std::string dir = fresh_bundle();
    InspectReport report = inspect(dir);
    QVERIFY(report.problems.empty());
    // Target, tokenizer, then every other weight file the manifest names: two drafters, SSD's heads, MuLo-SD's drafter.
    QCOMPARE(report.files.size(), std::size_t(6));
    QVERIFY(report.files.back().path.ends_with("low-res-drafter.safetensors"));
    QVERIFY(report.manifest_json.find("speculum-bundle/1") != std::string::npos);
    std::int64_t target_params = 0;
    for (const auto& t : report.files[0].tensors) {
      std::int64_t n = 1;
      for (auto d : t.shape) n *= d;
      target_params += n;
    }
    QCOMPARE(report.files[0].parameters, target_params);
    QCOMPARE(target_params, Engine::load(params_for(dir))->info().target_parameters);
    std::filesystem::remove(dir + "/ssd-heads.safetensors");
    report = inspect(dir);
    QCOMPARE(report.problems.size(), std::size_t(1));
    QVERIFY2(report.problems[0].find("ssd-heads.safetensors") != std::string::npos, report.problems[0].c_str());
  }
};

QTEST_GUILESS_MAIN(TestBundle)
#include "test_bundle.moc"
