// speculum-cli eval: prompt faithfulness of a bundle + method. Generates held-out shapes prompts (scene
// seeds the training data never uses), scores each image with the checker, and prints accuracy per
// prompt family and per claim kind; optionally a CSV with one row per prompt (for paired comparisons of
// methods on the same prompts and seeds, and for breakdowns the table does not show) and a sample sheet.
#include <QFont>
#include <QImage>
#include <QPainter>
#include <iomanip>
#include <iostream>
#include <map>

#include "cli/cli_options.h"
#include "cli/eval_records.h"
#include "common/offscreen_gui.h"
#include "common/png_export.h"
#include "speculum_tools.h"

namespace speculum::cli {
namespace {


struct Tally {
  int passed = 0, total = 0;
  void add(bool ok) { passed += ok, ++total; }
  double rate() const { return total ? double(passed) / total : 0; }
};

// The failed claims with what the checker found instead, "; "-separated.
std::string failed_claims(const eval::CheckReport& report) {
  std::string failed;
  for (const auto& claim : report.claims)
    if (!claim.passed) failed += (failed.empty() ? "" : "; ") + claim.failure();
  return failed;
}

QImage sample_sheet(const std::vector<std::pair<Image, std::string>>& samples, const std::vector<bool>& passed) {
  const int cols = 6, cell = 192, caption = 44;
  const int rows = (static_cast<int>(samples.size()) + cols - 1) / cols;
  QImage sheet(cols * cell, rows * (cell + caption), QImage::Format_RGB888);
  sheet.fill(Qt::white);
  QPainter p(&sheet);
  QFont font("DejaVu Sans");
  font.setPixelSize(11);
  p.setFont(font);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& [image, text] = samples[i];
    const int x = static_cast<int>(i % cols) * cell, y = static_cast<int>(i / cols) * (cell + caption);
    const QImage q(image.rgb.data(), image.width, image.height, image.width * 3, QImage::Format_RGB888);
    p.drawImage(QRect(x + 4, y + 4, cell - 8, cell - 8), q);
    p.setPen(passed[i] ? QColor(0, 120, 80) : QColor(200, 70, 0));
    p.drawText(QRect(x + 4, y + cell - 4, cell - 8, caption), Qt::TextWordWrap,
               QString(passed[i] ? "✓ " : "✗ ") + QString::fromStdString(text));
  }
  return sheet;
}

}  // namespace

void add_eval_command(CLI::App& app) {
  struct Args {
    EngineFlags engine;
    RequestFlags request;
    int prompts = 200;
    std::string sheet;
    std::string csv;
    int sheet_count = 36;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("eval", "Checker accuracy of a bundle and method on held-out shapes prompts");
  a->engine.add_to(*c);
  a->request.add_to(*c, /*with_method=*/true);
  c->add_option("--prompts", a->prompts, "Held-out prompts (image i: scene seed 7e8 + i, generation seed --seed + i)")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  c->add_option("--csv", a->csv,
                "Also write one row per prompt (seeds, family, background, caption, passed, failed claims, NFE, ms); "
                "rewritten every 20 prompts");
  c->add_option("--sheet", a->sheet, "Write a sample sheet PNG of the first images with their verdicts");
  c->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      const auto engine = Engine::load(a->engine.resolved());
      const GenerateParams base = a->request.resolved(engine->info());
      std::map<std::string, Tally> by_family, by_claim;
      Tally all;
      RunMetrics totals;
      std::vector<std::pair<Image, std::string>> samples;
      std::vector<bool> verdicts;
      std::string rows = kEvalCsvHeader;
      for (int i = 0; i < a->prompts; ++i) {
        const std::uint64_t scene_seed = data::kHeldOutSceneSeeds + i;
        const data::Scene scene = data::sample_scene(scene_seed);
        GenerateParams p = base;
        p.prompt = scene.caption();
        p.seed = base.seed + i;
        const GenerateResult r = engine->generate(p);
        totals.tokens += r.metrics.tokens;
        totals.nfe += r.metrics.nfe;
        totals.wall_ms += r.metrics.wall_ms;
        const eval::CheckReport report = check_image(r.image, eval::parse_shapes_prompt(p.prompt));
        all.add(report.passed());
        by_family[data::family_name(scene.family)].add(report.passed());
        for (const auto& claim : report.claims) by_claim[eval::claim_kind_name(claim.kind)].add(claim.passed);
        rows += eval_csv_row({i, scene_seed, p.seed, data::family_name(scene.family), data::mode_name(scene.mode), p.prompt,
                              report.passed(), failed_claims(report), r.metrics.nfe, r.metrics.wall_ms});
        if (static_cast<int>(samples.size()) < a->sheet_count) {
          samples.emplace_back(r.image, p.prompt);
          verdicts.push_back(report.passed());
        }
        if ((i + 1) % 20 == 0) std::cerr << "eval: " << i + 1 << "/" << a->prompts << " images, " << all.passed << " correct\n";
        // Rewritten as it goes, so that an interrupted run keeps its rows so far.
        if (!a->csv.empty() && ((i + 1) % 20 == 0 || i + 1 == a->prompts)) write_text_atomically(a->csv, rows);
      }
      std::cout << "eval: " << engine->info().name << ", method " << base.method << ", " << base.sampling.to_string() << ", "
                << a->prompts << " held-out prompts; NFE/image " << double(totals.nfe) / a->prompts << ", ms/image "
                << totals.wall_ms / a->prompts << "\n";
      auto print = [](const std::string& name, const Tally& t) {
        std::cout << "  " << std::left << std::setw(12) << name << std::right << std::setw(5) << t.passed << " / "
                  << std::setw(5) << t.total << "  " << std::fixed << std::setprecision(1) << 100 * t.rate() << " %\n";
      };
      print("all", all);
      for (const auto& [name, t] : by_family) print(name, t);
      std::cout << " claims:\n";
      for (const auto& [name, t] : by_claim) print(name, t);
      if (!a->csv.empty()) std::cout << "wrote " << a->csv << " (" << a->prompts << " rows)\n";
      if (!a->sheet.empty()) {
        const app::OffscreenGui gui;
        app::write_png(a->sheet, sample_sheet(samples, verdicts), {});
        std::cout << "wrote " << a->sheet << "\n";
      }
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
