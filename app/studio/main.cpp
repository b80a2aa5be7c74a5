// speculum: the studio window on the default bundle (or --bundle DIR).
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QStyleFactory>
#include <QTimer>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <thread>

#include "common/default_bundle.h"
#include "common/process_setup.h"
#include "comparison_view.h"
#include "main_window.h"
#include "method_params_form.h"
#include "request_panel.h"
#include "timeline_bar.h"

int main(int argc, char** argv) {
  speculum::app::ensure_passive_openmp(argv);
  QCommandLineParser cli;
  cli.setApplicationDescription("Speculum studio: speculative decoding of autoregressive image models");
  const QCommandLineOption help = cli.addHelpOption();
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
  const QCommandLineOption compare("compare", "Show the comparison view and run it (with --quit-when-done: print its table and quit).");
  const QCommandLineOption panes("panes", "With --compare: the panes' methods, comma-separated (2-4), e.g. ar,ar,ar.", "list");
  const QCommandLineOption batch("batch", "Generate makes this many images, consecutive seeds (1-64).", "n");
  const QCommandLineOption repeats("repeats", "With --compare: timed runs per pane, round-robin (1-10).", "n");
  const QCommandLineOption step("step", "After --open: show the state after this many steps.", "n");
  const QCommandLineOption theme("theme", "system, light or dark (remembered).", "theme");
  const QCommandLineOption layers("layers", "Overlay layers, comma-separated: token_state, commit_step, acceptance, grid_lines, origin, soft_score, pooled_mass, frontier, rounds, islands, low_res, p_of_token, entropy.", "list");
  cli.addOptions({bundle, device, prompt, seed, method, generate, batch, open, step, compare, panes, repeats, theme, layers, quit_after,
                  quit_when_done, threads});
  // The command line is checked before the window system starts, so --help and mistakes need no display.
  QStringList arguments;
  for (int i = 0; i < argc; ++i) arguments << QString::fromLocal8Bit(argv[i]);
  if (!cli.parse(arguments)) {
    std::fprintf(stderr, "speculum: %s\n", qPrintable(cli.errorText()));
    return 2;
  }
  if (cli.isSet(help)) {
    std::fputs(qPrintable(cli.helpText().replace("<executable_name>", "speculum")), stdout);
    return 0;
  }
  // A whole number in [low, high] or nothing; a bad value ends the program with a message naming the flag.
  const auto number = [&cli](const QCommandLineOption& option, long long low, long long high) -> std::optional<long long> {
    if (!cli.isSet(option)) return std::nullopt;
    bool ok = false;
    const long long value = cli.value(option).toLongLong(&ok);
    if (!ok || value < low || value > high) {
      std::fprintf(stderr, "speculum: --%s '%s': expected a whole number from %lld to %lld\n", qPrintable(option.names().front()),
                   qPrintable(cli.value(option)), low, high);
      std::exit(2);
    }
    return value;
  };
  const auto seed_value = number(seed, 0, std::numeric_limits<int>::max());
  const auto step_value = number(step, 0, std::numeric_limits<int>::max());
  const auto quit_after_value = number(quit_after, 0, 24LL * 3600 * 1000);
  const auto threads_value = number(threads, 1, 256);
  const auto repeats_value = number(repeats, 1, 10);
  const auto batch_value = number(batch, 1, 64);
  const QStringList pane_methods = cli.isSet(panes) ? cli.value(panes).split(',') : QStringList{};
  if (cli.isSet(panes) && (pane_methods.size() < 2 || pane_methods.size() > 4)) {
    std::fprintf(stderr, "speculum: --panes '%s': expected 2 to 4 methods, comma-separated\n", qPrintable(cli.value(panes)));
    return 2;
  }

  QApplication app(argc, argv);
  QApplication::setApplicationName("Speculum");
  QApplication::setOrganizationName("Speculum");
  QApplication::setStyle(QStyleFactory::create("Fusion"));

  speculum::EngineParams params;
  params.bundle_dir = cli.isSet(bundle) ? cli.value(bundle).toStdString() : speculum::app::default_bundle_dir();
  params.device = cli.value(device).toStdString();
  params.draft_sizes_file = speculum::app::draft_sizes_file();
  // One core stays with the window's thread, which decodes previews and paints while the engine runs.
  params.threads = threads_value ? static_cast<int>(*threads_value) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency() - 1));
  std::unique_ptr<speculum::Engine> engine;
  try {
    engine = speculum::Engine::load(params);
  } catch (const std::exception& e) {
    QMessageBox::critical(nullptr, "Speculum", QString("Cannot load the model bundle:\n%1").arg(QString::fromStdString(speculum::user_message(e))));
    return 1;
  }

  speculum::ui::MainWindow window(std::move(engine));
  if (cli.isSet(prompt)) window.set_prompt(cli.value(prompt));
  window.set_seed(static_cast<int>(seed_value.value_or(0)));
  if (cli.isSet(method) && !window.set_method(cli.value(method))) {
    QMessageBox::critical(nullptr, "Speculum", QString("This bundle cannot run the method '%1'.").arg(cli.value(method)));
    return 1;
  }
  if (batch_value) window.request_panel()->set_batch_size(static_cast<int>(*batch_value));
  window.show();
  if (cli.isSet(theme)) window.apply_theme(cli.value(theme));
  if (cli.isSet(layers)) window.set_layers(cli.value(layers).split(','));
  if (cli.isSet(open)) {  // what became of the file, on the terminal too (scripts check it)
    window.open_file(cli.value(open));
    std::fprintf(stderr, "studio: %s\n", qPrintable(window.status_text()));
  }
  if (step_value) window.timeline_bar()->set_position(static_cast<int>(*step_value));
  if (cli.isSet(generate)) QTimer::singleShot(0, &window, &speculum::ui::MainWindow::start_generation);
  if (cli.isSet(quit_when_done))
    QObject::connect(&window, &speculum::ui::MainWindow::generation_finished, &app, [&window](bool) {
      std::fprintf(stderr, "studio: %s; %.1f ms from Generate to the final image; the window's thread was busy %.1f ms while the engine ran\n",
                   qPrintable(window.status_text()), window.last_run_ms(), window.last_run_window_cpu_ms());
      QApplication::quit();
    });
  speculum::ui::ComparisonView* comparison = window.comparison();
  if (!pane_methods.isEmpty()) {
    comparison->set_pane_count(static_cast<int>(pane_methods.size()));
    for (int i = 0; i < pane_methods.size(); ++i)
      if (!comparison->method_form(i)->set_method(pane_methods[i].trimmed())) {
        QMessageBox::critical(nullptr, "Speculum", QString("This bundle cannot run the method '%1'.").arg(pane_methods[i]));
        return 1;
      }
  }
  if (repeats_value) comparison->set_repeats(static_cast<int>(*repeats_value));
  if (cli.isSet(compare) && cli.isSet(quit_when_done))
    QObject::connect(comparison, &speculum::ui::ComparisonView::all_finished, &app, [comparison] {
      std::fprintf(stderr, "%s\n%s\n", qPrintable(comparison->caption()), qPrintable(comparison->table_text()));
      QApplication::quit();
    });
  if (cli.isSet(compare)) QTimer::singleShot(0, &window, &speculum::ui::MainWindow::run_comparison);
  if (quit_after_value) QTimer::singleShot(static_cast<int>(*quit_after_value), &app, &QApplication::quit);
  return app.exec();
}
