// Where the shipped resources live: the embedded default bundle ($SPECULUM_BUNDLE, else the build tree's, else
// the installed one), the shapes feature network behind bench's Fréchet distance (likewise, $SPECULUM_FEATURE_NET),
// and the draft-size tables `auto` reads ($SPECULUM_DRAFT_SIZES, "none" for no file; else the user's cache folder).
#pragma once

#include <string>

namespace speculum::app {

std::string default_bundle_dir();
std::string feature_net_path();
std::string draft_sizes_file();  // "" for none

}  // namespace speculum::app
