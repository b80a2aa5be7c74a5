// The file `generate` writes for its image. Full builds: PNG with the generation's parameters in text
// chunks (png_export.h). SPECULUM_ENGINE_ONLY builds have no image codec: binary PPM (P6), and the
// parameters go to `<path>.json` beside it. Both write atomically; throw speculum::Error.
#pragma once

#include <map>
#include <string>

#include "speculum.h"

namespace speculum::app {

inline constexpr const char* kParametersKey = "parameters";  // GenerateParams::to_json()

const char* generated_image_extension();  // ".png" or ".ppm"
void write_generated_image(const std::string& path, const Image& image, const std::map<std::string, std::string>& text);

}  // namespace speculum::app
