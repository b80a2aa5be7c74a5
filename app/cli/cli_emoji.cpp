// speculum-cli data emoji: renders every fully-qualified emoji of Unicode's emoji-test.txt with the
// Noto Color Emoji font (Debian: fonts-noto-color-emoji, unicode-data) to 64x64 RGB on white, captioned
// with its lower-cased CLDR name. QtGui draws the colour bitmaps; this stays out of the engine core.
#include <QFontDatabase>
#include <QImage>
#include <QPainter>
#include <filesystem>
#include <sstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli/cli_options.h"
#include "speculum_tools.h"
#include "common/offscreen_gui.h"
#include "common/png_export.h"

namespace speculum::cli {
namespace {

struct EmojiEntry {
  QString text;
  std::string name;
  std::string codepoints;
};

std::vector<EmojiEntry> read_emoji_test(const std::string& path) {
  std::istringstream in(read_input_file(path, limits::kMaxSmallTextBytes, "emoji list",
                                        " (install Debian's unicode-data: sudo apt-get install unicode-data)"));
  // "1F469 1F3FB 200D 1F4BC ; fully-qualified # 👩🏻‍💼 E4.0 woman office worker: light skin tone"
  const std::regex line_re(R"(^([0-9A-F ]+?)\s*;\s*fully-qualified\s*#\s*\S+\s+E[0-9.]+\s+(.+)$)");
  std::vector<EmojiEntry> out;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) continue;
    std::vector<char32_t> cps;
    std::istringstream hex(m[1].str());
    for (std::string cp; hex >> cp;) cps.push_back(static_cast<char32_t>(std::stoul(cp, nullptr, 16)));
    std::string name = m[2].str();
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    out.push_back({QString::fromUcs4(cps.data(), static_cast<qsizetype>(cps.size())), name, m[1].str()});
  }
  if (out.empty()) throw Error("'" + path + "' lists no fully-qualified emoji");
  return out;
}

Image render(const QString& text, const QFont& font, int size) {
  QImage canvas(size, size, QImage::Format_RGB888);
  canvas.fill(Qt::white);
  QPainter painter(&canvas);
  painter.setRenderHint(QPainter::SmoothPixmapTransform);
  painter.setFont(font);
  painter.drawText(QRect(0, 0, size, size), Qt::AlignCenter, text);
  painter.end();
  Image image{size, size, {}};
  for (int y = 0; y < size; ++y) image.rgb.insert(image.rgb.end(), canvas.constScanLine(y), canvas.constScanLine(y) + size * 3);
  return image;
}

}  // namespace

void add_emoji_command(CLI::App& data_cmd) {
  struct Args {
    std::string out;
    std::string test_file = "/usr/share/unicode/emoji/emoji-test.txt";
    int size = 64;
    int limit = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = data_cmd.add_subcommand("emoji", "Render Noto Color Emoji with their CLDR names (PNG + captions.jsonl)");
  c->add_option("--out", a->out, "Output folder")->required();
  c->add_option("--emoji-test", a->test_file, "Unicode emoji-test.txt")->capture_default_str();
  c->add_option("--size", a->size, "Image side")->check(CLI::Range(16, 512))->capture_default_str();
  c->add_option("--limit", a->limit, "Only the first N emoji (0: all)")->check(CLI::NonNegativeNumber);
  c->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      auto entries = read_emoji_test(a->test_file);
      if (a->limit > 0 && a->limit < static_cast<int>(entries.size())) entries.resize(a->limit);
      const app::OffscreenGui gui;
      if (!QFontDatabase::families().contains("Noto Color Emoji"))
        throw Error("the Noto Color Emoji font is not installed (sudo apt-get install fonts-noto-color-emoji)");
      QFont font("Noto Color Emoji");
      font.setPixelSize(a->size * 3 / 4);
      std::filesystem::create_directories(a->out);
      const std::string index = a->out + "/captions.jsonl";
      std::ostringstream lines;
      int i = 0;
      for (const auto& e : entries) {
        char file[32];
        std::snprintf(file, sizeof file, "%05d.png", i++);
        app::write_png(a->out + "/" + file, render(e.text, font, a->size), {{"caption", e.name}});
        lines << nlohmann::json{{"file", file}, {"caption", e.name}, {"codepoints", e.codepoints}}.dump() << "\n";
      }
      write_text_atomically(index, lines.str());
      std::cout << "wrote " << entries.size() << " emoji and " << index << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
