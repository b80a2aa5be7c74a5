// speculum: the studio window on the default bundle (or --bundle DIR).
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QStyleFactory>
#include <QTimer>
#include <cstdio>
#include <thread>

#include "common/default_bundle.h"
#include "common/process_setup.h"
#include "main_window.h"
#include "timeline_bar.h"

int main(int argc, char** argv) {
  speculum::app::ensure_passive_openmp(argv);
  QApplication app(argc, argv);
  QApplication::setApplicationName("Speculum");
  QApplication::setOrganizationName("Speculum");
  QApplication::setStyle(QStyleFactory::create("Fusion"));

  QCommandLineParser cli;
  cli.setApplicationDescription("Speculum studio: speculative decoding of autoregressive image models");
  cli.addHelpOption();
  const QCommandLineOption bundle("bundle", "Model bundle folder (default: the embedded bundle).", "dir");
  const QCommandLineOption device("device", "auto, cpu or cuda.", "device", "auto");
  const QCommandLineOption prompt("prompt", "Initial prompt.", "text");
  const QCommandLineOption seed("seed", "Initial seed.", "n", "0");
  const QCommandLineOption method("method", "Initial decoding method (one the bundle can run).", "name");
  const QCommandLineOption generate("generate", "Start generating right away.");
  const QCommandLineOption quit_after("quit-after", "Quit after this many milliseconds (scripted screenshots).", "ms");
  const QCommandLineOption quit_when_done("quit-when-done", "With --generate: print the run's times on stderr and quit when it ends (scripts/studio-speed.sh).");
  const QCommandLineOption threads("threads", "LibTorch threads of a generation (default: all cores but one, which stays with the window).", "n");
  const QCommandLineOption open("open", "Open a trace (.jsonl) or a Speculum PNG.", "file");
  const QCommandLineOption compare("compare", "Show the comparison view and run it.");
  const QCommandLineOption step("step", "After --open: show the state after this many steps.", "n");
  const QCommandLineOption theme("theme", "system, light or dark (remembered).", "theme");
  const QCommandLineOption layers("layers", "Overlay layers, comma-separated: token_state, commit_step, acceptance, grid_lines, origin, soft_score, pooled_mass, frontier, rounds, islands, low_res.", "list");
  cli.addOptions({bundle, device, prompt, seed, method, generate, open, step, compare, theme, layers, quit_after, quit_when_done, threads});
  cli.process(app);

  speculum::EngineParams params;
  params.bundle_dir = cli.isSet(bundle) ? cli.value(bundle).toStdString() : speculum::app::default_bundle_dir();
  params.device = cli.value(device).toStdString();
  // One core stays with the window's thread, which decodes previews and paints while the engine runs.
  params.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency() - 1));
  if (cli.isSet(threads)) {
    bool ok = false;
    params.threads = cli.value(threads).toInt(&ok);
    if (!ok || params.threads < 1 || params.threads > 256) {
      std::fprintf(stderr, "speculum: --threads '%s': expected a whole number from 1 to 256\n", qPrintable(cli.value(threads)));
      return 2;
    }
  }
  std::unique_ptr<speculum::Engine> engine;
  try {
    engine = speculum::Engine::load(params);
  } catch (const std::exception& e) {
    QMessageBox::critical(nullptr, "Speculum", QString("Cannot load the model bundle:\n%1").arg(e.what()));
    return 1;
  }

  speculum::ui::MainWindow window(std::move(engine));
  if (cli.isSet(prompt)) window.set_prompt(cli.value(prompt));
  window.set_seed(cli.value(seed).toInt());
  if (cli.isSet(method) && !window.set_method(cli.value(method))) {
    QMessageBox::critical(nullptr, "Speculum", QString("This bundle cannot run the method '%1'.").arg(cli.value(method)));
    return 1;
  }
  window.show();
  if (cli.isSet(theme)) window.apply_theme(cli.value(theme));
  if (cli.isSet(layers)) window.set_layers(cli.value(layers).split(','));
  if (cli.isSet(open)) window.open_file(cli.value(open));
  if (cli.isSet(step)) window.timeline_bar()->set_position(cli.value(step).toInt());
  if (cli.isSet(generate)) QTimer::singleShot(0, &window, &speculum::ui::MainWindow::start_generation);
  if (cli.isSet(quit_when_done))
    QObject::connect(&window, &speculum::ui::MainWindow::generation_finished, &app, [&window](bool) {
      std::fprintf(stderr, "studio: %s; %.1f ms from Generate to the final image\n", qPrintable(window.status_text()), window.last_run_ms());
      QApplication::quit();
    });
  if (cli.isSet(compare)) QTimer::singleShot(0, &window, &speculum::ui::MainWindow::run_comparison);
  if (cli.isSet(quit_after)) QTimer::singleShot(cli.value(quit_after).toInt(), &app, &QApplication::quit);
  return app.exec();
}
