#include "common/png_export.h"

#include <QFile>
#include <QImage>
#include <QImageReader>
#include <QImageWriter>

#include "speculum_tools.h"

namespace speculum::app {

void write_png(const std::string& path, const Image& image, const std::map<std::string, std::string>& text) {
  if (image.width <= 0 || image.height <= 0 || image.rgb.size() != std::size_t(image.width) * image.height * 3)
    throw Error("cannot write '" + path + "': the image is empty or malformed");
  write_png(path, QImage(image.rgb.data(), image.width, image.height, image.width * 3, QImage::Format_RGB888), text);
}

void write_png(const std::string& path, const QImage& image, const std::map<std::string, std::string>& text) {
  if (image.isNull()) throw Error("cannot write '" + path + "': there is no image");
  QImage copy = image.copy();
  for (const auto& [key, value] : text) copy.setText(QString::fromStdString(key), QString::fromStdString(value));
  check_replaceable(path);
  const QString target = QString::fromStdString(path);
  const QString partial = target + ".partial";
  QImageWriter writer(partial, "png");
  if (!writer.write(copy)) {
    QFile::remove(partial);
    throw Error("cannot write '" + path + "': " + writer.errorString().toStdString());
  }
  replace_with(partial.toStdString(), path);  // one rename over the old file: readers see it whole, old or new
}

std::map<std::string, std::string> read_png_text(const std::string& path) {
  check_input_file(path, limits::kMaxImageFileBytes, "image");  // a FIFO would block the reader for ever
  QImageReader reader(QString::fromStdString(path));
  if (!reader.canRead()) throw Error("'" + path + "' is not a readable image: " + reader.errorString().toStdString());
  std::map<std::string, std::string> text;
  for (const QString& key : reader.textKeys()) text[key.toStdString()] = reader.text(key).toStdString();
  return text;
}

}  // namespace speculum::app
