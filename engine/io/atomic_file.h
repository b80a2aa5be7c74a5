// Writes a whole text file so that readers see the old file or the new one, never half of either:
// `<path>.partial` first, then a rename. Throws speculum::Error naming the file on failure.
#pragma once

#include <string>

namespace speculum {

void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace speculum
