// Where the embedded default bundle lives: $SPECULUM_BUNDLE, else the build tree's, else the installed one.
#pragma once

#include <string>

namespace speculum::app {

std::string default_bundle_dir();

}  // namespace speculum::app
