// The speed-quality chart of a bench or sweep run (PNG): speed-up against ar on x (median, IQR whiskers),
// the checker's pass rate on y (with the 95 % interval of the paired difference to ar), one labelled point
// per method or setting, ar marked. Needs checker verdicts and Qt (full builds only).
#pragma once

#include <string>
#include <vector>

#include "trace/bench_records.h"

namespace speculum::cli {

// Throws speculum::Error when no image was checked or the file cannot be written.
void write_speed_quality_plot(const BenchRun& run, const std::vector<BenchRow>& rows, const std::string& path);

}  // namespace speculum::cli
