// Writes a whole text file so that readers see the old file or the new one, never half of either:
// `<path>.partial` first, then a rename. Throws speculum::Error naming the file on failure.
#pragma once

#include <string>

namespace speculum {

void write_text_atomically(const std::string& path, const std::string& text);

// Outputs go only to new paths or over regular files: a device (/dev/null, /dev/full), FIFO, socket, folder or
// symbolic link at `path` is refused (renaming over it would delete the node). Throws Error naming the path.
void check_replaceable(const std::string& path);

// Moves the finished `partial` file over `path` in one rename (never deleting `path` first), after
// check_replaceable; removes `partial` and throws Error on failure.
void replace_with(const std::string& partial, const std::string& path);

}  // namespace speculum
