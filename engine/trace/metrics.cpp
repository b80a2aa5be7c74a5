#include "trace/metrics.h"

#include <type_traits>

namespace speculum {

void MetricsAccumulator::apply(const Event& event) {
  std::visit(
      [this](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, RunBegin>) {
          metrics_ = {};
        } else if constexpr (std::is_same_v<T, Verify>) {
          for (Decision d : e.decisions) {
            ++metrics_.drafted_verified;
            if (d != Decision::Reject) ++metrics_.accepted;
          }
        } else if constexpr (std::is_same_v<T, Commit>) {
          metrics_.tokens += static_cast<int>(e.cells.size());
        } else if constexpr (std::is_same_v<T, StepEnd>) {
          ++metrics_.steps;
          metrics_.nfe += e.fwd_passes_step;
          metrics_.wall_ms += e.wall_ms;
          metrics_.forward_ms += e.forward_ms;
        } else if constexpr (std::is_same_v<T, RunEnd>) {
          // The run's own totals include work outside steps (set-up, prefill bookkeeping).
          metrics_.nfe = e.nfe;
          metrics_.wall_ms = e.wall_ms;
          metrics_.forward_ms = e.forward_ms;
          metrics_.draft_ms = e.draft_ms;
          metrics_.cancelled = e.cancelled;
        }
      },
      event);
}

RunMetrics compute_metrics(const std::vector<Event>& events) {
  MetricsAccumulator acc;
  for (const Event& e : events) acc.apply(e);
  return acc.metrics();
}

}  // namespace speculum
