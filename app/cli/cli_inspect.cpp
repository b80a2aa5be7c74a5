// speculum-cli inspect: manifest, tensors, dtypes, sizes and parameter counts of a bundle or file.
#include <iomanip>
#include <iostream>

#include "cli/cli_options.h"

namespace speculum::cli {

void add_inspect_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto list_tensors = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand("inspect", "Describe a bundle folder or a safetensors file");
  c->add_option("path", *path, "Bundle folder or .safetensors file")->required();
  c->add_flag("--tensors", *list_tensors, "List every tensor (default for a single file)");
  c->final_callback([path, list_tensors] {
    const int rc = run_reporting_errors([&] {
      const InspectReport report = inspect(*path);
      if (!report.manifest_json.empty()) std::cout << "manifest (" << *path << "/speculum.json):\n" << report.manifest_json << "\n";
      for (const auto& f : report.files) {
        std::cout << f.path << ": " << f.tensors.size() << " tensors, " << f.parameters << " parameters ("
                  << std::fixed << std::setprecision(2) << f.parameters / 1e6 << " M), " << f.file_size << " bytes\n";
        for (const auto& [key, value] : f.metadata) std::cout << "  metadata " << key << " = " << value << "\n";
        if (*list_tensors || report.manifest_json.empty())
          for (const auto& t : f.tensors)
            std::cout << "  " << std::left << std::setw(56) << t.name << " " << std::setw(5) << t.dtype << " "
                      << std::setw(18) << t.shape_text() << " " << t.bytes << " B\n";
      }
      for (const auto& note : report.ignored) std::cout << "note: " << note << "\n";
      for (const auto& p : report.problems) std::cout << "problem: " << p << "\n";
      if (!report.problems.empty()) throw Error(std::to_string(report.problems.size()) + " problem(s) found");
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
