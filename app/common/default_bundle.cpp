#include "common/default_bundle.h"

#include <cstdlib>
#include <filesystem>

namespace speculum::app {

namespace {

// $variable, else `built` when `probe` exists, else `installed` under the program's share/speculum.
std::string resource(const char* variable, const std::filesystem::path& built, const std::filesystem::path& probe,
                     const char* installed) {
  if (const char* env = std::getenv(variable); env && *env) return env;
  if (std::filesystem::exists(probe)) return built.string();
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (exe.parent_path().parent_path() / "share/speculum" / installed).string();
}

}  // namespace

std::string default_bundle_dir() { return resource("SPECULUM_BUNDLE", SPECULUM_BUILD_BUNDLE_DIR, SPECULUM_BUILD_BUNDLE_DIR "/speculum.json", "models/default"); }

std::string feature_net_path() {
  return resource("SPECULUM_FEATURE_NET", SPECULUM_BUILD_FEATURE_NET, SPECULUM_BUILD_FEATURE_NET, "eval/shapes-features.safetensors");
}

std::string draft_sizes_file() {
  if (const char* env = std::getenv("SPECULUM_DRAFT_SIZES"); env && *env) return std::string(env) == "none" ? "" : env;
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (cache && *cache) return std::string(cache) + "/speculum/draft-sizes.json";
  return home && *home ? std::string(home) + "/.cache/speculum/draft-sizes.json" : "";
}

}  // namespace speculum::app
