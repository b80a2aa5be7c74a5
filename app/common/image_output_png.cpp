#include "common/image_output.h"

#include "common/png_export.h"

namespace speculum::app {

const char* generated_image_extension() { return ".png"; }

void write_generated_image(const std::string& path, const Image& image, const std::map<std::string, std::string>& text) {
  write_png(path, image, text);
}

}  // namespace speculum::app
