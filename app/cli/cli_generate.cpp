// speculum-cli generate: one image (PNG with its parameters; PPM in engine-only builds) and optionally its trace.
#include <iostream>
#include <memory>

#include "cli/cli_options.h"
#include "common/process_setup.h"
#include "speculum_tools.h"
#include "common/image_output.h"

namespace speculum::cli {

void add_generate_command(CLI::App& app) {
  struct State {
    EngineFlags engine;
    RequestFlags request;
    std::string out = std::string("speculum") + app::generated_image_extension();
    std::string trace;
  };
  auto state = std::make_shared<State>();
  CLI::App* c = app.add_subcommand("generate", "Generate one image");
  state->engine.add_to(*c);
  state->request.add_to(*c, /*with_method=*/true);
  c->add_option("--out", state->out, "Output image (PNG, parameters in its text chunk; PPM + .json in engine-only builds)")->capture_default_str();
  c->add_option("--trace", state->trace, "Write the event trace as JSON lines");
  c->final_callback([state] {
    const int rc = run_reporting_errors([&] {
      const std::atomic<bool>* interrupted = app::interrupt_flag();  // before any partial file exists
      if (state->out.empty()) throw Error("--out: the output path is empty");  // said before the run, not after it
      check_replaceable(state->out);  // before the run: a device or FIFO there is refused, not replaced
      const auto engine = Engine::load(state->engine.resolved());
      const GenerateParams params = state->request.resolved(engine->info());
      std::unique_ptr<TraceWriter> trace;
      if (!state->trace.empty()) trace = std::make_unique<TraceWriter>(state->trace);
      Callbacks callbacks;
      if (trace) callbacks.event = [&](const Event& e) { trace->write(e); };
      const GenerateResult result = engine->generate(params, callbacks, interrupted);
      if (result.cancelled) throw Error("interrupted: nothing written");  // the trace's partial file goes with it
      const RunMetrics& m = result.metrics;
      GenerateParams ran = params;  // auto draft sizes as they ran: the image's parameters repeat it exactly
      ran.method_options = result.method_options;
      // The image first: should it fail, the trace is not finished either (its partial file is removed).
      app::write_generated_image(state->out, result.image,
                     {{app::kParametersKey, ran.to_json()},
                      {"speculum:bundle", engine->info().name},
                      {"speculum:metrics", "nfe=" + std::to_string(m.nfe) + " tokens=" + std::to_string(m.tokens) +
                                               " wall_ms=" + std::to_string(m.wall_ms)}});
      if (trace) trace->finish();
      std::cout << "wrote " << state->out << " (" << result.image.width << "x" << result.image.height << ", "
                << m.tokens << " tokens, NFE " << m.nfe << ", tau " << m.mean_accepted_length() << ", "
                << static_cast<int>(m.wall_ms) << " ms)\n";
      if (trace) std::cout << "wrote " << state->trace << "\n";
    });
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace speculum::cli
