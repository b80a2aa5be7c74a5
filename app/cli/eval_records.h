// The per-prompt records of `speculum-cli eval --csv` and their reader: the file format that `compare`
// pairs two runs by (the model card's tolerance protocol compares methods prompt by prompt).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::cli {

struct EvalRecord {
  int prompt = 0;                // index i of the held-out prompt
  std::uint64_t scene_seed = 0;  // the shapes scene whose caption is the prompt
  std::uint64_t seed = 0;        // generation seed
  std::string family;            // single / count / relation
  std::string background;        // flat / gradient / noisy / striped
  std::string caption;
  bool passed = false;        // every claim passed
  std::string failed_claims;  // "; "-separated, each with what the checker found instead
  int nfe = 0;
  double ms = 0;
};

extern const char* const kEvalCsvHeader;             // with its newline
std::string eval_csv_row(const EvalRecord& record);  // with its newline

// Throws speculum::Error naming the file, line and column of any problem.
std::vector<EvalRecord> read_eval_csv(const std::string& path);

}  // namespace speculum::cli
