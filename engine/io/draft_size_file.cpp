#include "io/draft_size_file.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "decoding/method.h"
#include "error.h"
#include "io/atomic_file.h"
#include "io/input_file.h"
#include "io/json_fields.h"

namespace speculum {
namespace {

constexpr std::uint64_t kMaxDraftSizeFileBytes = 4u << 20;
constexpr int kMaxDraftSizeFileDepth = 8;  // file, tables, table, methods, method, trials, trial

const nlohmann::json& array_field(const nlohmann::json& object, const std::string& key, const std::string& where) {
  if (!object.contains(key) || !object[key].is_array()) throw Error(where + ": field '" + key + "' must be an array");
  return object[key];
}

double non_negative(const JsonFields& f, const std::string& key, const std::string& where) {
  const double value = f.number(key, -1);
  if (!(value >= 0 && std::isfinite(value))) throw Error(where + ": field '" + key + "' must be a number >= 0");
  return value;
}

MethodTuning read_method(const nlohmann::json& object, const std::string& where) {
  const JsonFields f(object, where);
  MethodTuning m{f.string("method"), f.string("param"), f.integer("chosen"), {}};
  const bool known = std::any_of(method_catalog().begin(), method_catalog().end(), [&](const MethodInfo& i) { return i.name == m.method; });
  if (!known) throw Error(where + ": unknown method '" + short_text(m.method) + "'");
  const ParamSpec* spec = draft_size_param(m.method);
  if (!spec || spec->name != m.param) throw Error(where + ": '" + short_text(m.param) + "' is not the draft size of method '" + m.method + "'");
  const auto& trials = array_field(object, "trials", where);
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const std::string at = where + ".trials[" + std::to_string(i) + "]";
    const JsonFields t(trials[i], at);
    DraftSizeTrial trial{t.integer("size"), non_negative(t, "ms_per_image", at), non_negative(t, "tokens_per_pass", at)};
    if (trial.size < spec->min || trial.size > spec->max)
      throw Error(at + ": size " + std::to_string(trial.size) + " is outside " + m.param + "'s range [" +
                  std::to_string(int(spec->min)) + ", " + std::to_string(int(spec->max)) + "]");
    m.trials.push_back(trial);
  }
  bool chosen_tried = false;
  for (const auto& t : m.trials) chosen_tried = chosen_tried || t.size == m.chosen;
  if (!chosen_tried) throw Error(where + ": the chosen size " + std::to_string(m.chosen) + " has no trial");
  if (!auto_may_choose(*spec, m.chosen))
    throw Error(where + ": the chosen size " + std::to_string(m.chosen) + " is past " + std::to_string(int(spec->auto_max)) +
                ", the largest auto may take for '" + m.method + "' (larger sizes change what it draws; pin one in the request)");
  return m;
}

DraftSizeTable read_table(const nlohmann::json& object, const std::string& where) {
  const JsonFields f(object, where);
  const JsonFields k = f.object("key");
  DraftSizeTable t;
  t.key = {k.string("bundle"), k.string("weights"), k.string("device"), k.integer("threads"), k.string("machine")};
  t.bundle_name = f.string("bundle_name");
  t.measured_at = f.string("measured_at");
  t.images = f.integer("images");
  t.ar_ms_per_image = non_negative(f, "ar_ms_per_image", where);
  const auto& curve = array_field(object, "cost_curve", where);
  for (std::size_t i = 0; i < curve.size(); ++i) {
    const std::string at = where + ".cost_curve[" + std::to_string(i) + "]";
    const JsonFields c(curve[i], at);
    t.cost_curve.push_back({c.integer("new_tokens"), non_negative(c, "ms", at)});
  }
  const auto& methods = array_field(object, "methods", where);
  for (std::size_t i = 0; i < methods.size(); ++i)
    t.methods.push_back(read_method(methods[i], where + ".methods[" + std::to_string(i) + "]"));
  return t;
}

nlohmann::json to_json(const DraftSizeTable& t) {
  nlohmann::json methods = nlohmann::json::array(), curve = nlohmann::json::array();
  for (const auto& c : t.cost_curve) curve.push_back({{"new_tokens", c.new_tokens}, {"ms", c.ms}});
  for (const auto& m : t.methods) {
    nlohmann::json trials = nlohmann::json::array();
    for (const auto& tr : m.trials)
      trials.push_back({{"size", tr.size}, {"ms_per_image", tr.ms_per_image}, {"tokens_per_pass", tr.tokens_per_pass}});
    methods.push_back({{"method", m.method}, {"param", m.param}, {"chosen", m.chosen}, {"trials", trials}});
  }
  return {{"key",
           {{"bundle", t.key.bundle}, {"weights", t.key.weights}, {"device", t.key.device}, {"threads", t.key.threads},
            {"machine", t.key.machine}}},
          {"bundle_name", t.bundle_name},
          {"measured_at", t.measured_at},
          {"images", t.images},
          {"ar_ms_per_image", t.ar_ms_per_image},
          {"cost_curve", curve},
          {"methods", methods}};
}

}  // namespace

std::vector<DraftSizeTable> read_draft_size_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return {};
  const std::string text = read_input_file(path, kMaxDraftSizeFileBytes, "draft-size file");
  const nlohmann::json doc = parse_untrusted_json(text, path, kMaxDraftSizeFileDepth);
  const JsonFields f(doc, path);
  if (f.string("format") != kDraftSizeFormat)
    throw Error(path + ": format '" + short_text(f.string("format")) + "' is not " + kDraftSizeFormat);
  std::vector<DraftSizeTable> tables;
  const auto& entries = array_field(doc, "tables", path);
  for (std::size_t i = 0; i < entries.size(); ++i) tables.push_back(read_table(entries[i], path + ": tables[" + std::to_string(i) + "]"));
  return tables;
}

std::string save_draft_size_table(const std::string& path, const DraftSizeTable& table) {
  std::vector<DraftSizeTable> tables;
  std::string note;
  try {
    tables = read_draft_size_file(path);
  } catch (const Error& e) {
    note = std::string("replaced an unreadable draft-size file (") + e.what() + ")";
  }
  std::erase_if(tables, [&](const DraftSizeTable& t) { return t.key == table.key; });
  tables.push_back(table);
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& t : tables) entries.push_back(to_json(t));
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) throw Error("cannot create the folder '" + parent.string() + "' for the draft-size file: " + ec.message());
  write_text_atomically(path, nlohmann::json{{"format", kDraftSizeFormat}, {"tables", entries}}.dump(1) + "\n");
  return note;
}

}  // namespace speculum
