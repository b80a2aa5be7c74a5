#include "models/step_team.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

namespace speculum {
namespace {

// Pauses (~10-40 ns each) a waiting thread spins before it yields its core on every further turn: longer than the
// gaps within a step, short beside a scheduler's time slice.
constexpr int kPausesBeforeYield = 2048;

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Helpers wait on `generation`; a run publishes its parts, bumps the generation and waits until every helper has
// acknowledged it (`pending` back to 0), so no helper can still be reading one run's parts when the next is published.
// A process forked from one with helpers (Python's multiprocessing, say) has none of those threads: it runs every part
// itself rather than wait for them.
class Team {
 public:
  ~Team() {
    if (::getpid() != owner_) {  // a forked child: the helpers are its parent's; joining them would never return,
      (void)helpers_.release();  // and destroying their handles would end the process
      return;
    }
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
    for (std::thread& t : *helpers_) t.join();
  }

  void run(int parts, const std::function<void(int)>& part) {
    std::unique_lock lock(busy_, std::try_to_lock);
    if (parts <= 1 || !lock.owns_lock() || ::getpid() != owner_) {
      for (int p = 0; p < parts; ++p) part(p);
      return;
    }
    std::vector<std::thread>& helpers = *helpers_;
    const std::uint32_t before = generation_.load(std::memory_order_acquire);
    while (static_cast<int>(helpers.size()) < parts - 1) {
      const int which = static_cast<int>(helpers.size()) + 1;
      helpers.emplace_back([this, which, before] { serve(which, before); });
    }
    part_ = &part;
    parts_ = parts;
    pending_.store(static_cast<int>(helpers.size()), std::memory_order_relaxed);
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) generation_.notify_all();  // a futex call only when a helper sleeps
    std::exception_ptr failure;
    try {
      part(0);
    } catch (...) {
      failure = std::current_exception();  // the helpers still hold `part`: wait for them before leaving
    }
    // Past a step's usual wait, yield: on a machine busier than its cores a helper may need this core to finish.
    for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins)
      spins < kPausesBeforeYield ? spin_pause() : std::this_thread::yield();
    if (failure) std::rethrow_exception(failure);
  }

 private:
  // Helper `which` runs part `which` of every run that has that many parts, from the generation after `seen`.
  void serve(int which, std::uint32_t seen) {
    for (;;) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicroseconds);
      std::uint32_t now = generation_.load(std::memory_order_acquire);
      for (int spins = 0; now == seen; ++spins) {
        if (spins % 64 == 0 && std::chrono::steady_clock::now() > until) {
          // Counted before the wait re-checks the generation: a run that bumped it without seeing this sleeper
          // bumped it before the check, so the wait returns at once.
          sleepers_.fetch_add(1);
          generation_.wait(seen);
          sleepers_.fetch_sub(1);
        } else if (spins < kPausesBeforeYield) {
          spin_pause();
        } else {
          std::this_thread::yield();  // as the caller's wait does: a busy machine's other threads get the core
        }
        now = generation_.load(std::memory_order_acquire);
      }
      seen = now;
      if (stop_.load(std::memory_order_acquire)) return;
      if (which < parts_) (*part_)(which);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  std::mutex busy_;
  const pid_t owner_ = ::getpid();  // the process the helpers run in
  std::unique_ptr<std::vector<std::thread>> helpers_ = std::make_unique<std::vector<std::thread>>();
  std::atomic<std::uint32_t> generation_{0};  // 32 bits: what a futex waits on
  std::atomic<int> sleepers_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int)>* part_ = nullptr;
  int parts_ = 0;
};

Team& team() {
  static Team instance;
  return instance;
}

}  // namespace

void run_on_team(int parts, const std::function<void(int)>& part) { team().run(parts, part); }

int team_parts(std::int64_t work, int threads) {
  return static_cast<int>(std::clamp<std::int64_t>(work / kMinTeamWork, 1, std::max(1, threads)));
}

}  // namespace speculum
