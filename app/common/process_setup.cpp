#include "common/process_setup.h"

#include <unistd.h>

#include <cstdlib>

namespace speculum::app {

void ensure_passive_openmp(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY")) return;
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  ::execv("/proc/self/exe", argv);  // returns only on failure; then we run on with the default policy
}

}  // namespace speculum::app
