// The speed-quality chart of a bench or sweep run: speed-up against ar on x (median, IQR whiskers), the
// checker's pass rate on y (with the 95 % interval of the paired difference to ar), one labelled point per
// method or setting, ar marked. Needs checker verdicts and Qt Gui (full builds: `bench --plot`, the studio).
#pragma once

#include <QImage>
#include <string>
#include <vector>

#include "speculum_tools.h"

namespace speculum::app {

// Needs a QGuiApplication; throws speculum::Error when no image was checked.
QImage speed_quality_chart(const BenchRun& run, const std::vector<BenchRow>& rows);

// From a command-line tool (its own offscreen GUI); throws when no image was checked or the file cannot be written.
void write_speed_quality_plot(const BenchRun& run, const std::vector<BenchRow>& rows, const std::string& path);

}  // namespace speculum::app
