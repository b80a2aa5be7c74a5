// inspect(): what a bundle folder or a safetensors file holds, and whether it would load.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/bundle.h"
#include "io/input_file.h"
#include "io/limits.h"
#include "io/safetensors.h"
#include "models/drafter.h"
#include "models/spatial_heads.h"
#include "speculum.h"

namespace speculum {

std::string TensorSummary::shape_text() const { return shape_to_string(shape); }
namespace {

FileSummary summarize(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  FileSummary s;
  s.path = path;
  s.file_size = file.file_size();
  for (const auto& t : file.tensors()) {
    s.tensors.push_back({t.name, dtype_name(t.dtype), t.shape, t.nbytes()});
    s.parameters += t.numel();
  }
  s.metadata.assign(file.metadata().begin(), file.metadata().end());
  return s;
}

}  // namespace

InspectReport inspect(const std::string& path) {
  InspectReport report;
  if (!std::filesystem::is_directory(path)) {
    report.files.push_back(summarize(path));
    return report;
  }
  // The checked reader: a FIFO or device in the manifest's place is refused, not opened (open() would block).
  report.manifest_json =
      read_input_file(path + "/" + kManifestName, limits::kMaxManifestBytes, "manifest", " (is this a Speculum bundle folder?)");
  const BundleManifest m = read_manifest(path);
  std::vector<std::pair<std::string, std::vector<TensorSpec>>> parts = {
      {m.target_path(), gpt_tensor_specs(m.target)}, {m.tokenizer_path(), vq_tensor_specs(m.tokenizer)}};
  for (const auto& [name, entry] : m.drafters) parts.push_back({m.drafter_path(name), drafter_tensor_specs(m.target, entry.convention)});
  if (const auto& h = m.ssd_heads) parts.push_back({m.ssd_heads_path(), spatial_heads_tensor_specs(m.target, h->horizontal, h->vertical)});
  if (m.low_res_drafter) parts.push_back({m.low_res_drafter_path(), gpt_tensor_specs(m.low_res_config())});
  for (const auto& [file, specs] : parts) {
    try {
      report.files.push_back(summarize(file));
      for (const auto& extra : check_weights(file, specs).unexpected)
        report.ignored.push_back(file + ": tensor '" + extra + "' is not used by the engine (ignored)");
    } catch (const Error& e) {
      report.problems.push_back(e.what());
    }
  }
  return report;
}

}  // namespace speculum
