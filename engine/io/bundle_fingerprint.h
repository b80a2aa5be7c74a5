// Which bundle a measurement belongs to: a hash of its manifest and of its weight files (size, first and last
// 64 KiB each), so retraining or converting anew changes it while loading a 3 GB bundle does not read it twice.
#pragma once

#include <string>

#include "io/bundle.h"

namespace speculum {

std::string bundle_fingerprint(const BundleManifest& manifest);

}  // namespace speculum
