#include "common/process_setup.h"

#include <csignal>

#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <climits>
#include <cstdlib>
#include <utility>

namespace speculum::app {

void ensure_passive_openmp(char** argv) {
  bool changed = false;
  for (const auto& [name, value] : {std::pair{"OMP_WAIT_POLICY", "PASSIVE"}, std::pair{"GOMP_SPINCOUNT", "20000"}})
    if (!std::getenv(name)) {
      ::setenv(name, value, 1);
      changed = true;
    }
  if (changed) ::execv("/proc/self/exe", argv);  // returns only on failure; then we run on with the default policy
}

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  ::mallopt(M_MMAP_MAX, 0);                    // large blocks come from the heap, not from their own mmap
  ::mallopt(M_TRIM_THRESHOLD, INT_MAX);        // and the heap's freed top is returned only beyond 2 GiB
#endif
}

namespace {

std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);  // so that the handler may store to it

extern "C" void on_interrupt(int signal_number) {
  interrupted.store(true);
  std::signal(signal_number, SIG_DFL);  // the next one is not caught
}

}  // namespace

const std::atomic<bool>* interrupt_flag() {
  static const bool installed = [] {
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
    return true;
  }();
  (void)installed;
  return &interrupted;
}

}  // namespace speculum::app
