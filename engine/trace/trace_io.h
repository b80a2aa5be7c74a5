// JSON-lines traces: one event per line, written atomically, read back into the same events.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "trace/events.h"

namespace speculum {

std::string event_to_json_line(const Event& event);  // no trailing newline
// Throws speculum::Error naming the problem (unknown type, missing or mistyped field).
Event event_from_json_line(const std::string& line);

// Streams events to `<path>.partial` and renames to `path` on finish(), so a reader never sees half a
// trace. Destroying an unfinished writer removes the partial file.
class TraceWriter {
 public:
  explicit TraceWriter(std::string path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void write(const Event& event);
  void finish();

 private:
  std::string path_;
  std::string partial_path_;
  std::FILE* file_ = nullptr;
};

// A whole run's events at once, through a TraceWriter (all or nothing).
void write_trace(const std::string& path, const std::vector<Event>& events);

// Reads a whole trace; errors name the file and line.
std::vector<Event> read_trace(const std::string& path);

}  // namespace speculum
