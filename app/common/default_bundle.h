// Where the shipped resources live: the embedded default bundle ($SPECULUM_BUNDLE, else the build tree's, else
// the installed one) and the shapes feature network behind bench's Fréchet distance (likewise, $SPECULUM_FEATURE_NET).
#pragma once

#include <string>

namespace speculum::app {

std::string default_bundle_dir();
std::string feature_net_path();

}  // namespace speculum::app
