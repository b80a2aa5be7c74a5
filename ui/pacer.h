// Pacing of display work beside a running generation.
#pragma once

#include <QElapsedTimer>

namespace speculum::ui {

// The window's work beside a running generation slows it even from a core of its own (shared caches and memory
// bandwidth, one process's page tables): unpaced, the studio's runs took 7 % longer than the CLI's
// (scripts/studio-speed.sh). A Pacer lets such work run at most once per interval, the interval growing with what
// the work last cost, so that it stays below `max_share` of the time.
class Pacer {
 public:
  Pacer(qint64 min_interval_ms, double max_share) : min_interval_ms_(min_interval_ms), max_share_(max_share) {}
  bool due() const;
  void ran(qint64 cost_ms);  // the work ran now and took cost_ms
  void reset() { clock_.invalidate(); }
  // Runs `work` if it is due, timing it; returns whether it ran.
  template <typename Work>
  bool run_if_due(Work&& work) {
    if (!due()) return false;
    QElapsedTimer cost;
    cost.start();
    work();
    ran(cost.elapsed());
    return true;
  }

 private:
  qint64 min_interval_ms_;
  double max_share_;
  qint64 interval_ms_ = 0;
  QElapsedTimer clock_;
};

// CPU time of the calling thread, in milliseconds.
double thread_cpu_ms();

// Paces a live view's frames by the CPU time its (the window's) thread spent since the previous frame, painting
// and everything else included: at most about 30 frames per second and 10 % of a core.
class FramePacer {
 public:
  void start();       // a run starts: the next frame is due at once
  bool next_frame();  // on each timer tick: is a frame due now?

 private:
  Pacer pacer_{33, 0.1};
  double cpu_mark_ms_ = 0;
};

}  // namespace speculum::ui
