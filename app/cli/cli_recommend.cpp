// speculum-cli recommend: the method options a bundle recommends (manifest "method_options"), which generate() uses for
// the options a request leaves out and the studio shows as the defaults. Prints them; --method with --opt sets one
// method's, --clear drops them.
#include <iostream>

#include "cli/cli_options.h"
#include "common/default_bundle.h"
#include "speculum_tools.h"

namespace speculum::cli {

namespace {

void print_recommendations(const std::string& bundle, const std::map<std::string, MethodOptions>& recommended) {
  if (recommended.empty()) std::cout << bundle << " recommends no method options: every method starts at the engine's defaults\n";
  for (const auto& [method, options] : recommended) {
    for (const MethodInfo& info : available_methods()) {
      if (info.name != method) continue;
      std::cout << method << ":";
      for (const auto& [name, value] : options)
        for (const ParamSpec& spec : info.params)
          if (spec.name == name)
            std::cout << "  " << name << " = " << param_value_text(spec, value) << " (engine default "
                      << param_value_text(spec, spec.default_value) << ")";
      std::cout << "\n";
    }
  }
}

}  // namespace

void add_recommend_command(CLI::App& app) {
  struct Args {
    std::string bundle, method;
    std::vector<std::string> options;
    bool clear = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand(
      "recommend", "Show or set the method options a bundle recommends (what generate uses for options a request leaves out)");
  c->add_option("--bundle", a->bundle, "Model bundle (default: the embedded one)");
  c->add_option("--method", a->method, "The method whose recommendation to set or clear");
  c->add_option("--opt", a->options, "Recommended parameter NAME=VALUE (repeatable; replaces the method's earlier ones)");
  c->add_flag("--clear", a->clear, "Drop the method's recommendation: it starts at the engine's defaults again");
  c->final_callback([a] {
    const int rc = run_reporting_errors([&] {
      if (a->bundle.empty()) a->bundle = app::default_bundle_dir();
      if (a->method.empty()) {
        if (!a->options.empty() || a->clear) throw Error("--opt and --clear need --method");
        EngineParams params;
        params.bundle_dir = a->bundle;
        params.device = "cpu";
        print_recommendations(a->bundle, Engine::load(params)->info().method_options);
        return;
      }
      if (a->clear == !a->options.empty()) throw Error("--method needs either --opt NAME=VALUE (to set) or --clear");
      print_recommendations(a->bundle, recommend_method_options(a->bundle, a->method, parse_method_options(a->options)));
      std::cout << "wrote them into " << a->bundle << "/" << kManifestName << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
