#include "common/default_bundle.h"

#include <cstdlib>
#include <filesystem>

namespace speculum::app {

std::string default_bundle_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("SPECULUM_BUNDLE"); env && *env) return env;
  const fs::path built = SPECULUM_BUILD_BUNDLE_DIR;
  if (fs::exists(built / "speculum.json")) return built.string();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path installed = exe.parent_path().parent_path() / "share/speculum/models/default";
  return installed.string();
}

}  // namespace speculum::app
