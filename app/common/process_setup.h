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

// Training allocates the same large activation tensors (tens of MB at batch 64) every step. glibc serves each
// from a fresh mmap and returns it on free, so every step faults in and zeroes its pages anew: a third of a
// batch-64 step of the default model went to page faults (`perf`), and the time per image grew with the batch.
// This keeps freed memory in the heap for the next step (batch 16 / 64: 1.57 / 15.2 -> 1.22 / 5.43 s per step,
// the losses unchanged; docs/model-card.md). The process's footprint stays at its peak, so only training asks for it.
void keep_freed_memory_for_reuse();

// Ctrl-C (SIGINT) or SIGTERM sets the returned flag, which a running generation polls as its cancel flag, so
// the command stops within one step and removes its partial outputs; a second signal ends the process at once.
const std::atomic<bool>* interrupt_flag();

}  // namespace speculum::app
