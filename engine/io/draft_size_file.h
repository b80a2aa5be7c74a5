// The file `auto` draft sizes come from (speculum-draft-sizes/1): one table per key (bundle, weights, device,
// threads, machine), written by `speculum-cli tune`, read by Engine::load. A cache: deleting it is harmless.
#pragma once

#include <string>
#include <vector>

#include "decoding/draft_sizes.h"

namespace speculum {

inline constexpr const char* kDraftSizeFormat = "speculum-draft-sizes/1";

// Every table in `path`; none when there is no file. Throws Error naming the file and the field at fault (an unknown
// method, a parameter that is not its draft size, a size out of range, a chosen size without its trial).
std::vector<DraftSizeTable> read_draft_size_file(const std::string& path);

// Adds `table` to `path`, replacing the table of the same key, atomically; creates the folder. A file that cannot be
// read is replaced (it is a cache): the returned note says so, else it is empty.
std::string save_draft_size_table(const std::string& path, const DraftSizeTable& table);

}  // namespace speculum
