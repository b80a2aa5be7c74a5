// A trace (JSON lines) as the studio opens it: read and checked, replayed step by step, and each scrubbed step drawn
// as the window draws it — the frame with every overlay layer, the legends, the draft tree's layout and the step's
// plain-language account (a trace that passed the reader once crashed the window when a step was shown).
#include <QGuiApplication>

#include "draft_tree_layout.h"
#include "error.h"
#include "frame_composer.h"
#include "fuzz_input.h"
#include "trace/timeline.h"
#include "trace/trace_io.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");  // painting text needs a GUI application, not a display
  static QGuiApplication app(*argc, *argv);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const speculum::Timeline timeline(speculum::read_trace(speculum::fuzz::write_input(data, size, "run.jsonl")));
    const speculum::vis::RunContents seen = speculum::vis::run_contents(timeline.events());
    speculum::vis::FrameStyle style;
    style.layers.insert(std::begin(speculum::vis::kAllLayers), std::end(speculum::vis::kAllLayers));
    style.last_step = std::max(0, timeline.step_count() - 1);
    for (int step : {0, timeline.step_count() / 2, timeline.step_count()}) {  // a scrubbed step and the live end
      const speculum::GridState grid = timeline.state_after(step);
      timeline.metrics_after(step);
      QImage image(grid.cols() * 4, grid.rows() * 4, QImage::Format_RGB32);
      image.fill(Qt::gray);
      speculum::vis::compose_frame(QSize(96, 96), image, grid, style, image);
      for (speculum::vis::Layer layer : speculum::vis::kAllLayers) speculum::vis::layer_legend(layer, style.last_step, seen);
      if (step > 0) {
        const std::vector<speculum::Event> events = timeline.events_of_step(step - 1);
        speculum::vis::layout_draft_tree(events);
        speculum::explain_step(events, step - 1, timeline.step_count());
      }
    }
  } catch (const speculum::Error&) {
  }
  return 0;
}
