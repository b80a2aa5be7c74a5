#include "io/bundle_fingerprint.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "error.h"
#include "io/fnv1a.h"

namespace speculum {
namespace {

constexpr std::streamoff kHashedEnds = 64 << 10;

void add_file(Fnv1a& hash, const std::string& path, bool whole) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path + "' to fingerprint its bundle");
  const std::streamoff size = static_cast<std::streamoff>(std::filesystem::file_size(path));
  const std::string name = std::filesystem::path(path).filename().string() + ":" + std::to_string(size);
  hash.add(name.c_str(), name.size() + 1);  // with its terminator: "ab"+"c" differs from "a"+"bc"
  std::vector<char> buffer;
  const auto add_range = [&](std::streamoff from, std::streamoff count) {
    buffer.resize(static_cast<std::size_t>(count));
    in.seekg(from);
    in.read(buffer.data(), count);
    hash.add(buffer.data(), static_cast<std::size_t>(in.gcount()));
  };
  if (whole || size <= 2 * kHashedEnds) {
    add_range(0, size);
  } else {
    add_range(0, kHashedEnds);
    add_range(size - kHashedEnds, kHashedEnds);
  }
}

}  // namespace

std::string bundle_fingerprint(const BundleManifest& m) {
  Fnv1a hash;
  add_file(hash, m.dir + "/" + kManifestName, true);
  std::vector<std::string> weights = {m.target_path(), m.tokenizer_path()};
  for (const auto& [name, entry] : m.drafters) weights.push_back(m.drafter_path(name));
  if (m.ssd_heads) weights.push_back(m.ssd_heads_path());
  if (m.low_res_drafter) weights.push_back(m.low_res_drafter_path());
  for (const auto& path : weights) add_file(hash, path, false);
  return hash.hex();
}

}  // namespace speculum
