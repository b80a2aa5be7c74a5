// A trace (JSON lines) as the studio opens it: read and checked, then replayed step by step.
#include "error.h"
#include "fuzz_input.h"
#include "trace/timeline.h"
#include "trace/trace_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const speculum::Timeline timeline(speculum::read_trace(speculum::fuzz::write_input(data, size, "run.jsonl")));
    for (int step : {0, timeline.step_count() / 2, timeline.step_count()}) {  // a scrubbed step and the live end
      timeline.state_after(step);
      timeline.metrics_after(step);
    }
  } catch (const speculum::Error&) {
  }
  return 0;
}
