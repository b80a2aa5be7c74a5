// A file of prompts, one per line: what bench, train samples and calibrate read with --prompts FILE.
#pragma once

#include <string>
#include <vector>

namespace speculum {

struct PromptLine {
  int line = 0;  // 1-based, for messages that name it
  std::string text;
};

constexpr int kMaxPromptsInFile = 100000;

// The prompts of `path`: each line trimmed of spaces, tabs and a CR; empty lines and lines starting with '#' skipped.
// Throws an Error naming the file (and the line where one is at fault) when it cannot be read, is larger than 4 MiB,
// holds more than kMaxPromptsInFile prompts or none.
std::vector<PromptLine> read_prompts_file(const std::string& path);

}  // namespace speculum
