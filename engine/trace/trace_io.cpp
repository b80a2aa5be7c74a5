#include "trace/trace_io.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "error.h"
#include "io/atomic_file.h"

namespace speculum {

void to_json(nlohmann::json& j, const Cell& c) { j = nlohmann::json::array({c.row, c.col}); }
void from_json(const nlohmann::json& j, Cell& c) {
  if (!j.is_array() || j.size() != 2) throw Error("a cell must be [row, col], got " + j.dump());
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

Event event_from_json_line(const std::string& line) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw Error("an event must be a JSON object with a string field 'type'");
  const auto type = j["type"].get<std::string>();
  for (std::size_t i = 0; i < std::size(kTypeNames); ++i) {
    if (type != kTypeNames[i]) continue;
    try {
      return event_of_type(i, j);
    } catch (const nlohmann::json::exception& e) {
      throw Error("event '" + type + "': " + e.what());
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

std::vector<Event> read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open trace '" + path + "'");
  std::vector<Event> events;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      events.push_back(event_from_json_line(line));
    } catch (const Error& e) {
      throw Error(path + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  return events;
}

}  // namespace speculum
