// Process-level settings both programs need before LibTorch does any work.
#pragma once

namespace speculum::app {

// libgomp reads OMP_WAIT_POLICY once, when it is loaded (before main). Spinning OpenMP workers turn a
// 2 ms forward into 250 ms when the GUI or another process shares the cores (env-probe.md §4), so if
// the variable is unset we set it to PASSIVE and re-execute ourselves once.
void ensure_passive_openmp(char** argv);

}  // namespace speculum::app
