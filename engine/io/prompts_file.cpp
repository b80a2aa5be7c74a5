#include "io/prompts_file.h"

#include <sstream>

#include "error.h"
#include "io/input_file.h"

namespace speculum {

std::vector<PromptLine> read_prompts_file(const std::string& path) {
  constexpr std::uint64_t kMaxBytes = 4u << 20;
  // The checked reader: a FIFO or a device is refused before open(), the size before reading.
  std::istringstream lines(read_input_file(path, kMaxBytes, "prompts file"));
  std::vector<PromptLine> prompts;
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line[0] == '#') continue;
    if (static_cast<int>(prompts.size()) == kMaxPromptsInFile)
      throw Error("prompts file '" + path + "' has more than " + std::to_string(kMaxPromptsInFile) + " prompts");
    prompts.push_back({number, line});
  }
  if (prompts.empty()) throw Error("prompts file '" + path + "' holds no prompt");
  return prompts;
}

}  // namespace speculum
