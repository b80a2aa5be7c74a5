// A run's events indexed by step: the replay model behind the timeline scrubber, the per-step charts
// and the comparison view. Works the same for a live run (append as events arrive) and a loaded trace.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trace/events.h"
#include "trace/grid_state.h"
#include "trace/metrics.h"

namespace speculum {

// One finished step, as the charts plot it.
struct StepPoint {
  int step = 0;
  int committed = 0;         // tokens committed by this step
  int forward_passes = 0;    // target forward passes of this step
  int tokens_total = 0;      // cumulative committed tokens after this step
  int nfe_total = 0;         // cumulative forward passes after this step
  int verified = 0;          // draft tokens verified in this step (0: nothing to accept or reject)
  int accepted = 0;
  double wall_ms = 0;

  double tokens_per_pass() const { return forward_passes > 0 ? double(committed) / forward_passes : 0; }
  double acceptance_rate() const { return verified > 0 ? double(accepted) / verified : 0; }
};

class Timeline {
 public:
  Timeline() = default;
  explicit Timeline(const std::vector<Event>& events);

  void append(const Event& event);

  const std::vector<Event>& events() const { return events_; }
  const std::vector<StepPoint>& steps() const { return steps_; }
  int step_count() const { return static_cast<int>(steps_.size()); }  // finished steps
  const std::optional<RunBegin>& run_begin() const { return run_begin_; }
  const RunMetrics& metrics() const { return metrics_.metrics(); }  // of every event so far
  bool finished() const { return finished_; }

  // The grid after the first `steps` finished steps (0: before any step; step_count(): the whole run,
  // including a cancelled run's trailing partial step).
  GridState state_after(int steps) const;
  RunMetrics metrics_after(int steps) const;
  // The events of step index `step` (0-based), from its StepBegin to its StepEnd.
  std::vector<Event> events_of_step(int step) const;

 private:
  std::size_t end_of(int steps) const;  // event index just past the `steps`-th StepEnd

  std::vector<Event> events_;
  std::vector<std::size_t> step_begin_index_;  // index of each step's first event
  std::vector<std::size_t> step_end_index_;    // one past each step's StepEnd
  std::vector<StepPoint> steps_;
  std::optional<RunBegin> run_begin_;
  MetricsAccumulator metrics_;
  // The state after every event so far, caught up lazily: a live view asks for it at every frame, and replaying
  // the whole run each time grows with the square of its length. Not for concurrent readers.
  mutable GridState latest_;
  mutable std::size_t latest_end_ = 0;
  bool finished_ = false;
  StepPoint open_;  // counts of the step in progress
};

// Plain-language account of one step for the teaching panel ("what am I looking at").
std::string explain_step(const std::vector<Event>& step_events, int step_index, int step_count);

}  // namespace speculum
