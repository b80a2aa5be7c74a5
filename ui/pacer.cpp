#include "pacer.h"

#include <algorithm>
#include <ctime>

namespace speculum::ui {

bool Pacer::due() const { return !clock_.isValid() || clock_.elapsed() >= interval_ms_; }

void Pacer::ran(qint64 cost_ms) {
  interval_ms_ = std::max(min_interval_ms_, static_cast<qint64>(static_cast<double>(cost_ms) / max_share_));
  clock_.restart();
}

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

void FramePacer::start() {
  pacer_.reset();
  cpu_mark_ms_ = thread_cpu_ms();
}

bool FramePacer::next_frame() {
  if (!pacer_.due()) return false;
  const double now = thread_cpu_ms();
  pacer_.ran(static_cast<qint64>(now - cpu_mark_ms_));
  cpu_mark_ms_ = now;
  return true;
}

}  // namespace speculum::ui
