// One definition of the run metrics (DESIGN.md §4), computed from events so that the CLI, the bench,
// the studio and a loaded trace agree.
#pragma once

#include <vector>

#include "trace/events.h"

namespace speculum {

struct RunMetrics {
  int tokens = 0;           // committed image tokens
  int nfe = 0;              // target forward passes
  int steps = 0;
  long drafted_verified = 0;  // draft tokens that went through verification (denominator)
  long accepted = 0;          // of which accepted, strict or soft (numerator)
  double wall_ms = 0;
  double forward_ms = 0;    // time inside target forward passes
  double draft_ms = 0;      // time drafting (drafters, heads, up-sampling), from RunEnd
  bool cancelled = false;

  double mean_accepted_length() const { return nfe > 0 ? double(tokens) / nfe : 0; }  // tau
  double acceptance_rate() const { return drafted_verified > 0 ? double(accepted) / drafted_verified : 0; }
  double tokens_per_second() const { return wall_ms > 0 ? tokens * 1000.0 / wall_ms : 0; }
  double outside_forward_share() const { return wall_ms > 0 ? 1.0 - forward_ms / wall_ms : 0; }
  double draft_share() const { return wall_ms > 0 ? draft_ms / wall_ms : 0; }
};

// Accumulates metrics event by event (live) or over a whole trace.
class MetricsAccumulator {
 public:
  void apply(const Event& event);
  const RunMetrics& metrics() const { return metrics_; }

 private:
  RunMetrics metrics_;
};

RunMetrics compute_metrics(const std::vector<Event>& events);

}  // namespace speculum
