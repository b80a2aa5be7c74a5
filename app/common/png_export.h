// PNG export with the generation's parameters in text chunks, so the image can recreate itself.
#pragma once

#include <QImage>
#include <map>
#include <string>

#include "common/image_output.h"  // kParametersKey
#include "speculum.h"

namespace speculum::app {

// Writes atomically (temporary file, then rename); throws speculum::Error on failure.
void write_png(const std::string& path, const Image& image, const std::map<std::string, std::string>& text);
void write_png(const std::string& path, const QImage& image, const std::map<std::string, std::string>& text);
// Text chunks of a PNG (empty when the file has none); throws when the file is not a readable image.
std::map<std::string, std::string> read_png_text(const std::string& path);

}  // namespace speculum::app
