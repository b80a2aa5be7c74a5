// The malformed-inputs corpus (tests/malformed/, one small file per case, named after what is wrong) replayed
// through the real readers: traces and PNG requests through their readers and the studio window (offscreen), manifests through
// Engine::load, safetensors through the weights loader, PyTorch checkpoints through the torch.save reader, images
// through the checker's reader, prompts through a text bundle's prompt check; T5 configs and weight indexes through
// the T5 folder reader, LANTERN drafter configs through its importer, T2I prompts through a T5 bundle's check. Each must give a
// speculum::Error naming the file or field (no crash, no other exception), within a time limit, and the corpus
// folder must be exactly as before (nothing written, nothing destroyed).
#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <filesystem>
#include <fstream>

#include "common/image_output.h"
#include "common/png_export.h"
#include "eval/prompt_checker.h"
#include "speculum.h"
#include "io/safetensors.h"
#include "io/t5_folder.h"
#include "io/torch_checkpoint.h"
#include "main_window.h"
#include "models/tensor_io.h"
#include "test_helpers.h"
#include "trace/trace_io.h"

using namespace speculum;

namespace {

const QString kCorpus = QStringLiteral(SPECULUM_MALFORMED_CORPUS);
const std::string kT2iFixtures = std::string(SPECULUM_TEST_FIXTURES) + "/llamagen-t2i";

// A copy of the tiny T5 fixture folder with `replace` (config.json or an index) written from the corpus file `path`;
// an index goes with the folder's safetensors removed, so the index is the layout read.
std::string t5_folder_with(const std::string& dir, const std::string& replace, const std::string& path) {
  std::filesystem::create_directories(dir);
  for (const char* name : {"config.json", "spiece.model", "model.safetensors"})
    if (name != replace && !(replace.ends_with(".index.json") && std::string(name) == "model.safetensors"))
      std::filesystem::copy_file(kT2iFixtures + "/t5_tiny/" + name, dir + "/" + name);
  std::filesystem::copy_file(path, dir + "/" + replace);
  return dir;
}

// The tiny LlamaGen T2I fixture converted once: what a T5 prompt or a LANTERN drafter is checked against.
const std::string& t2i_bundle(const std::string& tmp) {
  static const std::string bundle = [&] {
    ConvertParams p;
    p.gpt_path = kT2iFixtures + "/t2i_tiny.pt";
    p.vq_path = std::string(SPECULUM_TEST_FIXTURES) + "/llamagen/vq_tiny.pt";
    p.t5_dir = kT2iFixtures + "/t5_tiny";
    p.out_dir = tmp + "/t2i-bundle";
    p.overrides = {{"n_head", "4"}, {"image_size", "32"}};
    convert_llamagen(p);
    return p.out_dir;
  }();
  return bundle;
}

QStringList corpus_listing() {
  QStringList files;
  QDirIterator it(kCorpus, QDir::Files, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString file = it.next();
    files << QDir(kCorpus).relativeFilePath(file) + " " + QString::number(QFileInfo(file).size());
  }
  files.sort();
  return files;
}

}  // namespace

class TestMalformed : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QStringList listing_before_;

 private Q_SLOTS:
  void initTestCase() {
    listing_before_ = corpus_listing();
    QVERIFY(listing_before_.size() >= 40);
  }

  void every_case_gives_a_clean_error_data() {
    QTest::addColumn<QString>("file");
    for (const QString& entry : listing_before_) {
      const QString file = entry.section(' ', 0, 0);
      QTest::newRow(qPrintable(file)) << file;
    }
  }

  void every_case_gives_a_clean_error() {
    QFETCH(QString, file);
    const std::string path = (kCorpus + "/" + file).toStdString();
    const QString kind = file.section('/', 0, 0);
    QElapsedTimer clock;
    clock.start();
    std::string message;
    if (kind == "traces") {
      QVERIFY(test::throws_error_containing([&] { read_trace(path); }, QFileInfo(file).fileName().toStdString(), &message));
    } else if (kind == "manifests") {
      // The tiny test bundle with this manifest in place of its own.
      const std::string bundle = tmp_.path().toStdString() + "/" + QFileInfo(file).baseName().toStdString();
      std::filesystem::create_directories(bundle);
      for (const auto& f : std::filesystem::directory_iterator(test::bundles_dir() + "/tiny-text"))
        if (f.path().filename() != "speculum.json") std::filesystem::copy(f.path(), bundle + "/" + f.path().filename().string());
      std::filesystem::copy_file(path, bundle + "/speculum.json");
      EngineParams params;
      params.bundle_dir = bundle;
      params.device = "cpu";
      QVERIFY(test::throws_error_containing([&] { Engine::load(params); }, "speculum.json", &message));
    } else if (kind == "safetensors") {
      QVERIFY(test::throws_error_containing(
          [&] {
            const SafetensorsFile weights = SafetensorsFile::open(path);
            std::vector<TensorSpec> specs;
            for (const TensorInfo& t : weights.tensors()) specs.push_back({t.name, t.shape});
            load_tensors(weights, specs, at::kCPU);
          },
          QFileInfo(file).fileName().toStdString(), &message));
    } else if (kind == "png-parameters") {  // a PNG's request, as the studio restores it
      QVERIFY(test::throws_error_containing(
          [&] {
            const auto text = app::read_png_text(path);
            const auto it = text.find(app::kParametersKey);
            if (it == text.end()) throw Error("'" + path + "' has no Speculum parameters");
            check_request(GenerateParams::from_json(it->second));  // read, then checked as the window checks it
          },
          "", &message));
    } else if (kind == "checkpoints") {  // torch.save files, as `convert llamagen` reads them
      QVERIFY(test::throws_error_containing(
          [&] {
            const TorchCheckpoint checkpoint = TorchCheckpoint::open(path);
            for (const CheckpointTensor& tensor : checkpoint.tensors()) checkpoint.read(tensor);
          },
          QFileInfo(file).fileName().toStdString(), &message));
    } else if (kind == "prompts") {  // typed into a text-conditioned bundle's request
      EngineParams params;
      params.bundle_dir = test::bundles_dir() + "/tiny-text";
      params.device = "cpu";
      static const std::unique_ptr<Engine> engine = Engine::load(params);
      std::ifstream in(path, std::ios::binary);
      const std::string prompt{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      message = engine->check_prompt(prompt);
      QVERIFY2(!message.empty(), "accepted");
      QVERIFY2(message.find("prompt") != std::string::npos, message.c_str());
      for (unsigned char c : message) QVERIFY2(c >= 0x20, "a control character passed on");
      QVERIFY2(!QString::fromStdString(message).contains(QChar::ReplacementCharacter), "bytes that are not UTF-8 passed on");
    } else if (kind == "t5-configs" || kind == "t5-indexes") {  // a T5 folder as convert --t5 and a T5 bundle read it
      const std::string replace = kind == "t5-configs" ? "config.json" : "model.safetensors.index.json";
      const std::string dir = t5_folder_with(tmp_.path().toStdString() + "/" + kind.toStdString() + "-" + QFileInfo(file).baseName().toStdString(),
                                             replace, path);
      QVERIFY(test::throws_error_containing([&] { open_t5_folder(dir); }, replace, &message));
    } else if (kind == "lantern-configs") {  // convert lantern-drafter into a T2I bundle, which must stay as it was
      const std::string dir = tmp_.path().toStdString() + "/lantern-" + QFileInfo(file).baseName().toStdString();
      std::filesystem::create_directories(dir);
      std::filesystem::copy_file(kT2iFixtures + "/lantern_drafter_tiny/pytorch_model.bin", dir + "/pytorch_model.bin");
      std::filesystem::copy_file(path, dir + "/config.json");
      const std::string& bundle = t2i_bundle(tmp_.path().toStdString());
      const std::string manifest = test::read_bytes(bundle + "/speculum.json");
      QVERIFY(test::throws_error_containing([&] { import_lantern_drafter({dir, bundle}); }, "config.json", &message));
      QCOMPARE(test::read_bytes(bundle + "/speculum.json"), manifest);
    } else if (kind == "t5-prompts") {  // typed into a T5 bundle's request: any one line of text runs, up to the byte limit
      static const std::unique_ptr<Engine> engine = Engine::load({t2i_bundle(tmp_.path().toStdString()), "cpu", 1});
      message = engine->check_prompt(test::read_bytes(path));
      QVERIFY2(message.find("the prompt ") != std::string::npos, message.c_str());
    } else if (kind == "images") {
      QVERIFY(test::throws_error_containing([&] { eval::read_rgb_image(path); }, QFileInfo(file).fileName().toStdString(), &message));
    } else {
      QFAIL(qPrintable("a corpus folder without a reader: " + kind));
    }
    qInfo("%s: %s", qPrintable(file), message.substr(0, 200).c_str());
    QVERIFY2(message.find('\n') == std::string::npos, "one line, no stack of frames");
    QVERIFY2(message.size() < 600, "a message that names the problem, not one that quotes the input");
    QVERIFY2(clock.elapsed() < 5000, qPrintable(QString("%1 ms").arg(clock.elapsed())));
  }

  // The traces through the window: each refused with the file named in the status line; the window keeps its size.
  void the_window_refuses_every_malformed_trace() {
    EngineParams params;
    params.bundle_dir = test::bundles_dir() + "/tiny-text";
    params.device = "cpu";
    ui::MainWindow window(Engine::load(params), tmp_.filePath("settings.ini"));
    const QSize size = window.size();
    for (const QString& entry : listing_before_) {
      const QString file = entry.section(' ', 0, 0);
      if (!file.startsWith("traces/") && !file.startsWith("images/") && !file.startsWith("png-parameters/")) continue;
      QVERIFY2(!window.open_file(kCorpus + "/" + file), qPrintable(file));
      QVERIFY2(window.status_text().contains(QFileInfo(file).fileName()), qPrintable(file + ": " + window.status_text()));
      QCOMPARE(window.size(), size);
    }
  }

  void cleanupTestCase() { QCOMPARE(corpus_listing(), listing_before_); }
};

QTEST_MAIN(TestMalformed)
#include "test_malformed.moc"
