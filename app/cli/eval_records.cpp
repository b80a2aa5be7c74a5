#include "cli/eval_records.h"

#include <iomanip>
#include <sstream>

#include "speculum_tools.h"

namespace speculum::cli {
namespace {

constexpr int kColumns = 10;

std::string quoted(const std::string& field) {
  std::string out = "\"";
  for (const char ch : field) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

// RFC 4180 fields of one line (eval never writes line breaks inside a field).
std::vector<std::string> split_fields(const std::string& line, const std::string& where) {
  std::vector<std::string> fields(1);
  bool in_quotes = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (in_quotes && ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (ch == '"') {
      in_quotes = !in_quotes;
    } else if (ch == ',' && !in_quotes) {
      fields.emplace_back();
    } else {
      fields.back() += ch;
    }
  }
  if (in_quotes) throw Error(where + ": unterminated quoted field");
  return fields;
}

template <typename T>
T parse_number(const std::string& text, const std::string& where, const char* column) {
  std::istringstream in(text);
  T value{};
  if (!(in >> value) || !in.eof()) throw Error(where + ": column '" + column + "' is '" + text + "', not a number");
  return value;
}

}  // namespace

const char* const kEvalCsvHeader = "prompt,scene_seed,seed,family,background,caption,passed,failed_claims,nfe,ms\n";

std::string eval_csv_row(const EvalRecord& r) {
  std::ostringstream row;
  row << r.prompt << "," << r.scene_seed << "," << r.seed << "," << r.family << "," << r.background << ","
      << quoted(r.caption) << "," << (r.passed ? 1 : 0) << "," << quoted(r.failed_claims) << "," << r.nfe << ","
      << std::fixed << std::setprecision(1) << r.ms << "\n";
  return row.str();
}

std::vector<EvalRecord> read_eval_csv(const std::string& path) {
  std::istringstream in(read_input_file(path, limits::kMaxTableBytes, "eval table"));
  std::string line;
  std::getline(in, line);
  const std::string header = kEvalCsvHeader;
  if (line + "\n" != header)
    throw Error("'" + path + "' is not an `eval --csv` file (its header should be " +
                header.substr(0, header.size() - 1) + ")");
  std::vector<EvalRecord> records;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::string where = "'" + path + "' line " + std::to_string(number);
    const auto f = split_fields(line, where);
    if (static_cast<int>(f.size()) != kColumns)
      throw Error(where + ": " + std::to_string(f.size()) + " fields, expected " + std::to_string(kColumns));
    if (f[6] != "0" && f[6] != "1") throw Error(where + ": column 'passed' is '" + f[6] + "', expected 0 or 1");
    records.push_back({parse_number<int>(f[0], where, "prompt"), parse_number<std::uint64_t>(f[1], where, "scene_seed"),
                       parse_number<std::uint64_t>(f[2], where, "seed"), f[3], f[4], f[5], f[6] == "1", f[7],
                       parse_number<int>(f[8], where, "nfe"), parse_number<double>(f[9], where, "ms")});
  }
  if (records.empty()) throw Error("'" + path + "' has no rows");
  return records;
}

}  // namespace speculum::cli
