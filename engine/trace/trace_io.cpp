#include "trace/trace_io.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "error.h"
#include "io/atomic_file.h"
#include "io/input_file.h"
#include "io/json_fields.h"
#include "io/limits.h"

namespace speculum {

void to_json(nlohmann::json& j, const Cell& c) { j = nlohmann::json::array({c.row, c.col}); }
void from_json(const nlohmann::json& j, Cell& c) {
  // The bad value is named by its type, never dumped: it may be huge.
  if (!j.is_array() || j.size() != 2 || !j[0].is_number_integer() || !j[1].is_number_integer())
    throw Error(std::string("a cell must be [row, col], got ") + (j.is_array() ? "an array of " + std::to_string(j.size()) : j.type_name()));
  c.row = j[0].get<int>();
  c.col = j[1].get<int>();
}

namespace {
constexpr const char* kDecisionNames[] = {"STRICT_ACCEPT", "SOFT_ACCEPT", "REJECT"};
}

const char* decision_name(Decision d) { return kDecisionNames[static_cast<int>(d)]; }

void to_json(nlohmann::json& j, const Decision& d) { j = decision_name(d); }
void from_json(const nlohmann::json& j, Decision& d) {
  const auto name = j.get<std::string>();
  for (int i = 0; i < 3; ++i) {
    if (name == kDecisionNames[i]) {
      d = static_cast<Decision>(i);
      return;
    }
  }
  throw Error("unknown decision '" + name + "' (allowed: STRICT_ACCEPT, SOFT_ACCEPT, REJECT)");
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunBegin, method, params_json, grid_rows, grid_cols, vocab_size,
                                                low_res_rows, low_res_cols)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepBegin, step, phase, fwd_passes_total)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Draft, step, round, source, cells, tokens, q_of_token, tree_parent,
                                   tree_depth)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Frontier, step, cells)
// Traces written before the tree and soft-verification fields existed still read.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Verify, step, round, cells, tokens, p_of_token, q_of_token, ratio, u,
                                                pooled_p, decisions, nodes, soft_delta, soft_g, soft_score)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Resample, step, round, dist, cells, old_tokens, new_tokens, p_of_token)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Region, step, kind, island_id, radius, cells)
void to_json(nlohmann::json& j, const Commit& c) {
  j = {{"step", c.step},         {"cells", c.cells},     {"tokens", c.tokens}, {"p_of_token", c.p_of_token},
       {"kv_begin", c.kv_begin}, {"kv_end", c.kv_end},   {"entropy", c.entropy}, {"top_tokens", c.top_tokens},
       {"top_p", c.top_p}};
}
// Traces written before the target's entropy and top candidates were recorded still read; the rest is required.
void from_json(const nlohmann::json& j, Commit& c) {
  j.at("step").get_to(c.step);
  j.at("cells").get_to(c.cells);
  j.at("tokens").get_to(c.tokens);
  j.at("p_of_token").get_to(c.p_of_token);
  j.at("kv_begin").get_to(c.kv_begin);
  j.at("kv_end").get_to(c.kv_end);
  c.entropy = j.value("entropy", std::vector<float>{});
  c.top_tokens = j.value("top_tokens", std::vector<int>{});
  c.top_p = j.value("top_p", std::vector<float>{});
}
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KVRollback, step, to_len)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepEnd, step, committed_cells, fwd_passes_step, wall_ms, forward_ms,
                                   accept_rate_step)
// Traces written before draft_ms existed still read.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunEnd, tokens, nfe, wall_ms, forward_ms, cancelled, draft_ms)

namespace {

constexpr const char* kTypeNames[] = {"RunBegin", "StepBegin",  "Draft",   "Frontier",
                                      "Verify",   "Resample",   "Region",  "Commit",
                                      "KVRollback", "StepEnd", "RunEnd"};
static_assert(std::size(kTypeNames) == std::variant_size_v<Event>);

template <std::size_t I = 0>
Event event_of_type(std::size_t index, const nlohmann::json& j) {
  if constexpr (I < std::variant_size_v<Event>) {
    if (index == I) return j.get<std::variant_alternative_t<I, Event>>();
    return event_of_type<I + 1>(index, j);
  } else {
    throw Error("unreachable event index");
  }
}

}  // namespace

const char* event_type_name(const Event& event) { return kTypeNames[event.index()]; }

std::string event_to_json_line(const Event& event) {
  nlohmann::json j;
  std::visit([&j](const auto& e) { j = e; }, event);
  j["type"] = event_type_name(event);
  return j.dump();
}

namespace {

// The events' integer fields (ids, counts, steps, cells): nlohmann would truncate 1.5 to 1 and wrap 2^40 silently.
constexpr const char* kIntegerFields[] = {"grid_rows", "grid_cols", "vocab_size", "low_res_rows", "low_res_cols", "step",
                                          "fwd_passes_total", "round", "cells", "tokens", "tree_parent", "tree_depth",
                                          "nodes", "old_tokens", "new_tokens", "island_id", "radius", "kv_begin",
                                          "kv_end", "top_tokens", "to_len", "committed_cells", "fwd_passes_step", "nfe"};

void check_integers(const nlohmann::json& value, const char* field) {
  if (value.is_array()) {
    for (const auto& element : value) check_integers(element, field);
    return;
  }
  if (!value.is_number()) return;  // a wrong type is named where the field is read
  const bool exact = value.is_number_integer() &&
                     (value.is_number_unsigned() ? value.get<std::uint64_t>() <= std::uint64_t(std::numeric_limits<int>::max())
                                                 : value.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                                                       value.get<std::int64_t>() <= std::numeric_limits<int>::max());
  if (!exact)
    throw Error(std::string("field '") + field + "' must hold whole numbers from " + std::to_string(std::numeric_limits<int>::min()) +
                " to " + std::to_string(std::numeric_limits<int>::max()) + ", got " + short_text(value.dump(), 24));
}

}  // namespace

Event event_from_json_line(const std::string& line) {
  const nlohmann::json j = parse_untrusted_json(line, "the line", limits::kMaxTraceLineDepth);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw Error("an event must be a JSON object with a string field 'type'");
  for (const char* field : kIntegerFields)
    if (j.contains(field)) check_integers(j[field], field);
  const auto type = short_text(j["type"].get<std::string>());
  for (std::size_t i = 0; i < std::size(kTypeNames); ++i) {
    if (type != kTypeNames[i]) continue;
    try {
      return event_of_type(i, j);
    } catch (const nlohmann::json::exception& e) {
      throw Error("event '" + type + "': " + user_message(e));
    }
  }
  std::string allowed;
  for (const char* name : kTypeNames) allowed += std::string(allowed.empty() ? "" : ", ") + name;
  throw Error("unknown event type '" + type + "' (allowed: " + allowed + ")");
}

TraceWriter::TraceWriter(std::string path) : path_(std::move(path)), partial_path_(path_ + ".partial") {
  check_replaceable(path_);  // before the run, not after it
  file_ = std::fopen(partial_path_.c_str(), "wb");
  if (!file_) throw Error("cannot write trace '" + partial_path_ + "': " + std::strerror(errno));
}

TraceWriter::~TraceWriter() {
  if (file_) {
    std::fclose(file_);
    std::remove(partial_path_.c_str());
  }
}

void TraceWriter::write(const Event& event) {
  if (!file_) throw Error("trace '" + path_ + "' is already finished");
  const std::string line = event_to_json_line(event) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size())
    throw Error("writing trace '" + partial_path_ + "' failed: " + std::strerror(errno));
}

void TraceWriter::finish() {
  if (!file_) return;
  const bool ok = std::fflush(file_) == 0;
  std::fclose(file_);
  file_ = nullptr;
  if (!ok) {
    std::remove(partial_path_.c_str());
    throw Error("cannot finish trace '" + path_ + "': " + std::strerror(errno));
  }
  replace_with(partial_path_, path_);
}

void write_trace(const std::string& path, const std::vector<Event>& events) {
  TraceWriter writer(path);
  for (const Event& e : events) writer.write(e);
  writer.finish();
}

namespace {

// What a trace may hold, checked line by line against its RunBegin, so that a damaged or hostile file gets an
// error naming the line instead of a crash, a hang or a window that grows without bound.
class TraceChecker {
 public:
  void check(const Event& event) {
    if (!begun_ && !std::holds_alternative<RunBegin>(event))
      throw Error(std::string("a trace starts with RunBegin, this line is ") + event_type_name(event));
    std::visit([this](const auto& e) { check_event(e); }, event);
  }

 private:
  static void label(const std::string& text, const char* field) {
    if (text.size() > limits::kMaxLabelChars)
      throw Error(std::string("field '") + field + "' holds " + std::to_string(text.size()) + " characters (the label limit is " +
                  std::to_string(limits::kMaxLabelChars) + ")");
  }
  static void count(int value, int most, const char* field) {
    if (value < 0 || value > most)
      throw Error(std::string("field '") + field + "' is " + std::to_string(value) + " (allowed: 0 to " + std::to_string(most) + ")");
  }
  template <typename T>
  static void same_length(const std::vector<T>& values, std::size_t cells, const char* field, bool optional = true) {
    if ((optional && values.empty()) || values.size() == cells) return;
    throw Error(std::string("field '") + field + "' holds " + std::to_string(values.size()) + " values for " + std::to_string(cells) + " cells");
  }
  void cells(const std::vector<Cell>& list, bool low_res = false) const {
    const int r = low_res ? low_rows_ : rows_, c = low_res ? low_cols_ : cols_;
    for (const Cell& cell : list)
      if (cell.row < 0 || cell.row >= r || cell.col < 0 || cell.col >= c)
        throw Error("cell (" + std::to_string(cell.row) + ", " + std::to_string(cell.col) + ") is outside the " + std::to_string(r) + "x" +
                    std::to_string(c) + (low_res ? " low-resolution grid" : " grid"));
  }
  void tokens(const std::vector<int>& list, bool open_allowed) const {
    for (int t : list)
      if (t >= vocab_ || t < (open_allowed ? -1 : 0))
        throw Error("token " + std::to_string(t) + " is outside the " + std::to_string(vocab_) + "-code vocabulary");
  }

  void check_event(const RunBegin& e) {
    if (begun_) throw Error("a second RunBegin: one run per trace");
    label(e.method, "method");
    if (e.params_json.size() > limits::kMaxParamsJsonBytes) throw Error("field 'params_json' is larger than 1 MiB");
    count(e.grid_rows, limits::kMaxGridSide, "grid_rows");
    count(e.grid_cols, limits::kMaxGridSide, "grid_cols");
    if (e.grid_rows == 0 || e.grid_cols == 0) throw Error("field 'grid_rows' / 'grid_cols' must be at least 1");
    count(e.vocab_size, limits::kMaxVocab, "vocab_size");
    if (e.vocab_size == 0) throw Error("field 'vocab_size' must be at least 1");
    count(e.low_res_rows, e.grid_rows, "low_res_rows");
    count(e.low_res_cols, e.grid_cols, "low_res_cols");
    begun_ = true;
    rows_ = e.grid_rows, cols_ = e.grid_cols, vocab_ = e.vocab_size, low_rows_ = e.low_res_rows, low_cols_ = e.low_res_cols;
  }
  void check_event(const StepBegin& e) { label(e.phase, "phase"); }
  void check_event(const Draft& e) {
    label(e.source, "source");
    if (e.cells.size() > static_cast<std::size_t>(limits::kMaxDraftNodes))
      throw Error("field 'cells' holds " + std::to_string(e.cells.size()) + " drafted cells (allowed: at most " +
                  std::to_string(limits::kMaxDraftNodes) + ")");
    cells(e.cells, e.source.starts_with("low_res"));
    same_length(e.tokens, e.cells.size(), "tokens", false);
    same_length(e.q_of_token, e.cells.size(), "q_of_token");
    same_length(e.tree_parent, e.cells.size(), "tree_parent");
    same_length(e.tree_depth, e.cells.size(), "tree_depth");
    tokens(e.tokens, false);
    // A tree names its nodes by their index in this event: a parent is -1 (the last committed token) or another node.
    const auto n = static_cast<int>(e.cells.size());
    for (int i = 0; i < static_cast<int>(e.tree_parent.size()); ++i)
      if (e.tree_parent[i] < -1 || e.tree_parent[i] >= n || e.tree_parent[i] == i)
        throw Error("field 'tree_parent' names node " + std::to_string(e.tree_parent[i]) + " for node " + std::to_string(i) +
                    " (allowed: -1 or another of the " + std::to_string(n) + " nodes)");
    for (const int depth : e.tree_depth)
      if (depth < 0 || depth > n) throw Error("field 'tree_depth' holds " + std::to_string(depth) + " (allowed: 0.." + std::to_string(n) + ")");
  }
  void check_event(const Frontier& e) { cells(e.cells); }
  void check_event(const Verify& e) {
    cells(e.cells);
    same_length(e.tokens, e.cells.size(), "tokens", false);
    same_length(e.decisions, e.cells.size(), "decisions", false);
    for (const auto* values : {&e.p_of_token, &e.q_of_token, &e.ratio, &e.u, &e.pooled_p, &e.soft_delta, &e.soft_g, &e.soft_score})
      same_length(*values, e.cells.size(), "p_of_token / q_of_token / ratio / u / pooled_p / soft_*");
    same_length(e.nodes, e.cells.size(), "nodes");
    tokens(e.tokens, false);
  }
  void check_event(const Resample& e) {
    label(e.dist, "dist");
    cells(e.cells);
    same_length(e.old_tokens, e.cells.size(), "old_tokens", false);
    same_length(e.new_tokens, e.cells.size(), "new_tokens", false);
    same_length(e.p_of_token, e.cells.size(), "p_of_token");
    tokens(e.old_tokens, true);
    tokens(e.new_tokens, false);
  }
  void check_event(const Region& e) {
    label(e.kind, "kind");
    cells(e.cells);
  }
  void check_event(const Commit& e) {
    cells(e.cells);
    same_length(e.tokens, e.cells.size(), "tokens", false);
    same_length(e.p_of_token, e.cells.size(), "p_of_token");
    same_length(e.entropy, e.cells.size(), "entropy");
    same_length(e.top_tokens, e.cells.size() * kTopCandidates, "top_tokens");
    same_length(e.top_p, e.cells.size() * kTopCandidates, "top_p");
    tokens(e.tokens, false);
    tokens(e.top_tokens, true);
  }
  void check_event(const KVRollback&) {}
  void check_event(const StepEnd& e) {
    count(e.committed_cells, rows_ * cols_, "committed_cells");
    count(e.fwd_passes_step, limits::kMaxStepPasses, "fwd_passes_step");
  }
  void check_event(const RunEnd& e) {
    count(e.tokens, rows_ * cols_, "tokens");
    count(e.nfe, std::numeric_limits<int>::max(), "nfe");
  }

  bool begun_ = false;
  int rows_ = 0, cols_ = 0, vocab_ = 0, low_rows_ = 0, low_cols_ = 0;
};

}  // namespace

std::vector<Event> read_trace(const std::string& path) {
  check_input_file(path, limits::kMaxTraceBytes, "trace");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open trace '" + path + "'");
  std::vector<Event> events;
  TraceChecker checker;
  // Lines are read into a buffer of the line limit: an endless line (a broken or hostile file) is refused, not held.
  const std::unique_ptr<char[]> buffer(new char[limits::kMaxTraceLineBytes + 1]);
  for (int number = 1; in; ++number) {
    in.getline(buffer.get(), static_cast<std::streamsize>(limits::kMaxTraceLineBytes + 1));
    if (in.fail() && !in.eof())
      throw Error(path + ":" + std::to_string(number) + ": the line is longer than " + std::to_string(limits::kMaxTraceLineBytes) +
                  " bytes (the trace line limit)");
    const std::streamsize got = in.gcount();  // with the newline, when there was one
    const std::size_t stored = static_cast<std::size_t>(in.eof() ? got : got - 1);
    if (stored == 0) continue;
    try {
      events.push_back(event_from_json_line(std::string(buffer.get(), stored)));
      checker.check(events.back());
    } catch (const Error& e) {
      throw Error(path + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  return events;
}

}  // namespace speculum
