#include "common/image_output.h"

#include <nlohmann/json.hpp>

#include "speculum_tools.h"

namespace speculum::app {

const char* generated_image_extension() { return ".ppm"; }

void write_generated_image(const std::string& path, const Image& image, const std::map<std::string, std::string>& text) {
  if (!path.ends_with(".ppm"))
    throw Error("'" + path + "': this build (SPECULUM_ENGINE_ONLY) writes images as binary PPM only; name the file *.ppm");
  if (image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * 3)
    throw Error("'" + path + "': the image has " + std::to_string(image.rgb.size()) + " bytes for " +
                std::to_string(image.width) + "x" + std::to_string(image.height) + " RGB pixels");
  std::string ppm = "P6\n" + std::to_string(image.width) + " " + std::to_string(image.height) + "\n255\n";
  ppm.append(reinterpret_cast<const char*>(image.rgb.data()), image.rgb.size());
  write_text_atomically(path, ppm);
  write_text_atomically(path + ".json", nlohmann::json(text).dump(2) + "\n");
}

}  // namespace speculum::app
