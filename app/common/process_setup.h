// Process-level settings both programs need before LibTorch does any work.
#pragma once

#include <atomic>

namespace speculum::app {

// libgomp reads OMP_WAIT_POLICY once, when it is loaded (before main). Spinning OpenMP workers turn a
// 2 ms forward into 250 ms when the GUI or another process shares the cores (env-probe.md §4), so if
// the variable is unset we set it to PASSIVE and re-execute ourselves once. PASSIVE alone puts a worker to
// sleep after every parallel region, and a GPT-B step has ~60 of them back to back: GOMP_SPINCOUNT=20000 (unless
// set) lets a worker spin some tens of microseconds first (2-thread GPT-B step 16.6 -> 12-13 ms; the default
// model's step unchanged beside two busy processes).
void ensure_passive_openmp(char** argv);

// Ctrl-C (SIGINT) or SIGTERM sets the returned flag, which a running generation polls as its cancel flag, so
// the command stops within one step and removes its partial outputs; a second signal ends the process at once.
const std::atomic<bool>* interrupt_flag();

}  // namespace speculum::app
