#include "io/bundle.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "error.h"
#include "io/atomic_file.h"
#include "io/json_fields.h"
#include "io/input_file.h"
#include "io/limits.h"
#include "io/sampling_fields.h"
#include "io/safetensors.h"

namespace speculum {
namespace {

// A weights file named by the manifest: a plain file name inside the bundle folder, never a path out of it.
std::string bundle_file(const JsonFields& section, const std::string& key, const std::string& manifest) {
  const std::string name = section.string(key);
  if (!is_plain_file_name(name))
    throw Error(manifest + ": '" + short_text(name) + "' (a '" + key + "' field) must be a file name inside the bundle folder");
  return name;
}

// Names a user types to pick a class or a word: each non-empty, printable, unique; a word also without spaces
// (prompts are split at spaces, so such a word could never be typed).
void check_names(const std::vector<std::string>& names, const std::string& field, bool words, const std::string& path) {
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string at = path + ": " + field + "[" + std::to_string(i) + "]";
    const std::string& name = names[i];
    if (name.empty()) throw Error(at + " is empty");
    for (const char c : name) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) throw Error(at + " '" + short_text(name) + "' holds a control character");
      if (words && c == ' ') throw Error(at + " '" + short_text(name) + "' holds a space (a prompt's words are split at spaces)");
    }
    if (const auto [it, fresh] = seen.emplace(name, i); !fresh)
      throw Error(at + " '" + short_text(name) + "' repeats " + field + "[" + std::to_string(it->second) + "]");
  }
}

}  // namespace

VqConfig read_tokenizer_section(const JsonFields& tok) {
  VqConfig vq;
  vq.codebook_size = tok.integer("codebook_size");
  vq.codebook_dim = tok.integer("codebook_dim");
  vq.z_channels = tok.integer("z_channels");
  vq.ch = tok.integer("ch");
  vq.ch_mult = tok.integers("ch_mult");
  vq.num_res_blocks = tok.integer("num_res_blocks");
  vq.norm_groups = tok.integer("norm_groups", 32);
  vq.has_encoder = tok.boolean("encoder", true);
  return vq;
}

nlohmann::json tokenizer_section(const VqConfig& vq, const std::string& weights) {
  return {{"codebook_size", vq.codebook_size}, {"codebook_dim", vq.codebook_dim}, {"z_channels", vq.z_channels},
          {"ch", vq.ch}, {"ch_mult", vq.ch_mult}, {"num_res_blocks", vq.num_res_blocks},
          {"norm_groups", vq.norm_groups}, {"encoder", vq.has_encoder}, {"weights", weights}};
}

namespace {

// Names and values only: which methods and options exist is the decoding catalog's business (Engine::load checks them).
std::map<std::string, std::map<std::string, double>> read_method_options(const nlohmann::json& section, const std::string& path) {
  if (!section.is_object())
    throw Error(path + ": field 'method_options' must be an object of methods, e.g. {\"ssd\": {\"rounds\": 8}}");
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& [method, options] : section.items()) {
    const std::string where = path + ": method_options." + short_text(method);
    if (!options.is_object()) throw Error(where + " must be an object of option values, e.g. {\"rounds\": 8}");
    for (const auto& [name, value] : options.items()) {
      if (!value.is_number() || !std::isfinite(value.get<double>()))
        throw Error(where + "." + short_text(name) + " must be a finite number");
      out[method][name] = value.get<double>();
    }
  }
  return out;
}

}  // namespace

BundleManifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/" + kManifestName;
  const nlohmann::json doc = parse_untrusted_json(read_input_file(path, limits::kMaxManifestBytes, "manifest", " (is this a Speculum bundle folder?)"), path, limits::kMaxManifestDepth);
  const JsonFields root(doc, path);
  BundleManifest m;
  m.dir = dir;
  const std::string format = root.string("format");
  if (format != kBundleFormat)
    throw Error(path + ": format '" + format + "' is not supported (expected '" + kBundleFormat + "')");
  m.name = root.string("name");

  const JsonFields image = root.object("image");
  m.image_size = image.integer("size");
  const std::vector<int> grid = image.integers("grid");
  if (grid.size() != 2 || grid[0] <= 0 || grid[1] <= 0 || grid[0] > limits::kMaxGridSide || grid[1] > limits::kMaxGridSide)
    throw Error(path + ": field 'image.grid' must be [rows, cols], each from 1 to " + std::to_string(limits::kMaxGridSide) +
                " (the grid-side limit)");

  m.tokenizer = read_tokenizer_section(root.object("tokenizer"));
  const VqConfig& vq = m.tokenizer;
  m.tokenizer_weights = bundle_file(root.object("tokenizer"), "weights", path);

  const JsonFields tgt = root.object("target");
  GptConfig& g = m.target;
  g.dim = tgt.integer("dim");
  g.n_layer = tgt.integer("n_layer");
  g.n_head = tgt.integer("n_head");
  g.ffn_dim = tgt.integer("ffn_dim", 0);
  if (g.ffn_dim < 0 || g.ffn_dim > 1 << 20)
    throw Error(path + ": field 'target.ffn_dim' is " + std::to_string(g.ffn_dim) + " (allowed: 1..1048576, or 0 / absent for LlamaGen's rule)");
  g.vocab_size = tgt.integer("vocab_size");
  g.rope_base = tgt.number("rope_base", 10000.0);
  g.norm_eps = tgt.number("norm_eps", 1e-5);
  g.image_positions = tgt.boolean("image_positions", false);
  g.grid_rows = grid[0];
  g.grid_cols = grid[1];
  m.target_weights = bundle_file(tgt, "weights", path);

  const JsonFields cond = root.object("condition");
  const std::string kind = cond.string("kind");
  if (kind == "class") {
    g.condition = ConditionKind::Class;
    m.classes = cond.strings("classes");
    check_names(m.classes, "condition.classes", false, path);
    g.num_classes = static_cast<int>(m.classes.size());
    g.class_null_row = cond.boolean("null_class", true);
    g.cls_token_num = 1;
  } else if (kind == "text") {
    g.condition = ConditionKind::Text;
    m.text_vocab = cond.strings("vocab");
    if (m.text_vocab.size() > static_cast<std::size_t>(limits::kMaxVocab))
      throw Error(path + ": condition.vocab holds " + std::to_string(m.text_vocab.size()) + " words (the vocabulary limit is " +
                  std::to_string(limits::kMaxVocab) + ")");
    check_names(m.text_vocab, "condition.vocab", true, path);
    g.text_vocab_size = static_cast<int>(m.text_vocab.size());
    g.cls_token_num = cond.integer("max_words");
    g.caption_dim = tgt.integer("caption_dim");
    g.text_encoder_layers = tgt.integer("text_encoder_layers", 0);
  } else if (kind == "t5") {
    g.condition = ConditionKind::Text;
    g.caption_source = CaptionSource::T5;
    g.cls_token_num = cond.integer("max_tokens");
    g.caption_dim = tgt.integer("caption_dim");
    const JsonFields t5 = cond.object("t5");
    T5Reference& ref = m.t5.emplace();
    ref.folder = t5.string("folder");
    ref.fingerprint = t5.string("fingerprint");
    ref.clean_captions = t5.boolean("clean_captions", true);
    if (ref.folder.empty() || ref.folder.find('\0') != std::string::npos)
      throw Error(path + ": field 'condition.t5.folder' must name the T5 folder");
    if (g.cls_token_num < 1 || g.cls_token_num > 4096)
      throw Error(path + ": field 'condition.max_tokens' is " + std::to_string(g.cls_token_num) + " (allowed: 1..4096)");
  } else {
    throw Error(path + ": field 'condition.kind' is '" + short_text(kind) + "' (allowed: class, text, t5)");
  }
  if (root.has("drafters")) {
    const JsonFields drafters = root.object("drafters");
    for (const auto& [name, entry] : doc["drafters"].items()) {
      if (std::find(kDrafterNames.begin(), kDrafterNames.end(), name) == kDrafterNames.end())
        throw Error(path + ": drafters: unknown drafter '" + name + "' (allowed: eagle, lisa)");
      const JsonFields d = drafters.object(name);
      m.drafters[name] = {bundle_file(d, "weights", path), d.string("objective")};
      const std::string convention = d.has("convention") ? d.string("convention") : "speculum";
      if (convention != "speculum" && convention != "lantern")
        throw Error(path + ": drafters." + name + ".convention is '" + short_text(convention) + "' (allowed: speculum, lantern)");
      m.drafters[name].convention = convention == "lantern" ? DrafterConvention::Lantern : DrafterConvention::Speculum;
      m.drafters[name].norm_eps = d.number("norm_eps", 0);
      if (!(m.drafters[name].norm_eps >= 0 && m.drafters[name].norm_eps < 1))
        throw Error(path + ": drafters." + name + ".norm_eps must be in [0, 1) (0: the target's)");
      m.drafters[name].rope_grid = d.integer("rope_grid", 0);
      if (m.drafters[name].rope_grid < 0 || m.drafters[name].rope_grid > limits::kMaxGridSide)
        throw Error(path + ": drafters." + name + ".rope_grid must be 0 (the target's) to " + std::to_string(limits::kMaxGridSide));
      if (m.drafters[name].objective != "eagle" && m.drafters[name].objective != "lisa")
        throw Error(path + ": drafters." + name + ".objective is '" + m.drafters[name].objective + "' (allowed: eagle, lisa)");
    }
  }
  if (root.has("soft_verification")) {
    const JsonFields sv = root.object("soft_verification");
    SoftVerificationBounds b;
    b.alpha = sv.number("alpha", -1);
    b.beta = sv.number("beta", -1);
    b.u_bound = sv.number("u_bound", -1);
    b.delta_max = sv.number("delta_max", -1);
    b.confidence_max = sv.number("confidence_max", 0.9);
    b.samples = sv.integer("samples", 0);
    for (const auto& [field, value] : {std::pair{"alpha", b.alpha}, {"beta", b.beta}, {"u_bound", b.u_bound}, {"delta_max", b.delta_max}})
      if (!(value >= 0) || !std::isfinite(value))
        throw Error(path + ": soft_verification." + field + " must be a finite number >= 0");
    if (!(b.confidence_max > 0 && b.confidence_max <= 1))
      throw Error(path + ": soft_verification.confidence_max must be in (0, 1]");
    m.soft_verification = b;
  }
  if (root.has("ssd_heads")) {
    const JsonFields h = root.object("ssd_heads");
    m.ssd_heads = SpatialHeadsEntry{bundle_file(h, "weights", path), h.integer("horizontal"), h.integer("vertical")};
    if (m.ssd_heads->horizontal < 1 || m.ssd_heads->horizontal > kMaxHorizontalHeads)
      throw Error(path + ": ssd_heads.horizontal is " + std::to_string(m.ssd_heads->horizontal) + " (allowed: 1.." +
                  std::to_string(kMaxHorizontalHeads) + ")");
    if (m.ssd_heads->vertical < 1 || m.ssd_heads->vertical > kMaxVerticalHeads)
      throw Error(path + ": ssd_heads.vertical is " + std::to_string(m.ssd_heads->vertical) + " (allowed: 1.." +
                  std::to_string(kMaxVerticalHeads) + ")");
  }
  if (root.has("low_res_drafter")) {
    const JsonFields d = root.object("low_res_drafter");
    const std::vector<int> low_grid = d.integers("grid");
    if (low_grid.size() != 2) throw Error(path + ": field 'low_res_drafter.grid' must be [rows, cols]");
    m.low_res_drafter = LowResDrafterEntry{bundle_file(d, "weights", path), low_grid[0], low_grid[1]};
    const bool divides = low_grid[0] > 0 && low_grid[1] > 0 && grid[0] % low_grid[0] == 0 &&
                         grid[0] / low_grid[0] == grid[1] / low_grid[1] && grid[1] % low_grid[1] == 0;
    if (!divides || std::find(kLowResFactors.begin(), kLowResFactors.end(), grid[0] / low_grid[0]) == kLowResFactors.end())
      throw Error(path + ": low_res_drafter.grid [" + std::to_string(low_grid[0]) + ", " + std::to_string(low_grid[1]) +
                  "] is not image.grid [" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) +
                  "] divided by 2 or 4 in both directions");
  }
  if (root.has("weight_format")) {
    try {
      m.weight_format = parse_weight_format(root.string("weight_format"));
    } catch (const Error& e) {
      throw Error(path + ": " + e.what());
    }
  }
  if (root.has("sampling")) {
    m.sampling = read_sampling_fields(root.object("sampling"), m.sampling);
    try {
      m.sampling.validate();
    } catch (const Error& e) {
      throw Error(path + ": sampling: " + e.what());
    }
  }
  if (root.has("method_options")) m.method_options = read_method_options(doc["method_options"], path);

  if (root.has("prompt_guide")) {
    const JsonFields guide = root.object("prompt_guide");
    PromptGuide& pg = m.prompt_guide.emplace();
    pg.grammar = guide.string("grammar");
    pg.examples = guide.strings("examples");
    pg.chosen_by = guide.string("chosen_by");
    if (pg.examples.size() > kMaxGuideExamples)
      throw Error(path + ": prompt_guide.examples holds " + std::to_string(pg.examples.size()) + " prompts (at most " +
                  std::to_string(kMaxGuideExamples) + ")");
    std::vector<std::string> texts = pg.examples;
    texts.push_back(pg.grammar);
    texts.push_back(pg.chosen_by);
    for (const std::string& text : texts)
      if (text.size() > kMaxGuideText)
        throw Error(path + ": prompt_guide: a text of " + std::to_string(text.size()) + " characters (at most " +
                    std::to_string(kMaxGuideText) + ")");
  }

  try {
    validate_config(g);
    validate_config(vq);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  if (g.vocab_size < 1 || g.vocab_size > limits::kMaxVocab)
    throw Error(path + ": target.vocab_size " + std::to_string(g.vocab_size) + " is outside 1 .. " + std::to_string(limits::kMaxVocab) +
                " (the vocabulary limit)");
  if (g.vocab_size != vq.codebook_size)
    throw Error(path + ": target.vocab_size " + std::to_string(g.vocab_size) +
                " differs from tokenizer.codebook_size " + std::to_string(vq.codebook_size));
  if (grid[0] * vq.downsample_factor() != m.image_size || grid[1] * vq.downsample_factor() != m.image_size)
    throw Error(path + ": image.size " + std::to_string(m.image_size) + " is not image.grid times the tokenizer's " +
                "downsampling factor " + std::to_string(vq.downsample_factor()) + " (from tokenizer.ch_mult)");
  return m;
}

std::string BundleManifest::t5_folder() const {
  const std::string& folder = t5.value().folder;
  return folder.front() == '/' ? folder : dir + "/" + folder;
}

GptConfig BundleManifest::low_res_config() const {
  GptConfig c = target;
  c.grid_rows = low_res_drafter.value().grid_rows;
  c.grid_cols = low_res_drafter.value().grid_cols;
  return c;
}

void write_manifest(const BundleManifest& m, const std::string& dir) {
  const GptConfig& g = m.target;
  const VqConfig& vq = m.tokenizer;
  nlohmann::json doc = {
      {"format", kBundleFormat},
      {"name", m.name},
      {"image", {{"size", m.image_size}, {"grid", {g.grid_rows, g.grid_cols}}}},
      {"tokenizer", tokenizer_section(vq, m.tokenizer_weights)},
      {"target",
       {{"dim", g.dim}, {"n_layer", g.n_layer}, {"n_head", g.n_head}, {"ffn_dim", g.ffn_hidden()},
        {"vocab_size", g.vocab_size}, {"rope_base", g.rope_base}, {"norm_eps", g.norm_eps},
        {"image_positions", g.image_positions}, {"weights", m.target_weights}}},
      {"drafters", nlohmann::json::object()},
  };
  for (const auto& [name, d] : m.drafters) {
    doc["drafters"][name] = {{"weights", d.weights}, {"objective", d.objective}};
    if (d.convention == DrafterConvention::Lantern) doc["drafters"][name]["convention"] = "lantern";
    if (d.norm_eps > 0) doc["drafters"][name]["norm_eps"] = d.norm_eps;
    if (d.rope_grid > 0) doc["drafters"][name]["rope_grid"] = d.rope_grid;
  }
  if (const auto& b = m.soft_verification)
    doc["soft_verification"] = {{"alpha", b->alpha}, {"beta", b->beta}, {"u_bound", b->u_bound}, {"delta_max", b->delta_max},
                                {"confidence_max", b->confidence_max}, {"samples", b->samples}};
  if (const auto& h = m.ssd_heads)
    doc["ssd_heads"] = {{"weights", h->weights}, {"horizontal", h->horizontal}, {"vertical", h->vertical}};
  if (const auto& d = m.low_res_drafter) doc["low_res_drafter"] = {{"weights", d->weights}, {"grid", {d->grid_rows, d->grid_cols}}};
  write_sampling_fields(m.sampling, doc["sampling"]);
  if (m.weight_format != WeightFormat::F32) doc["weight_format"] = weight_format_name(m.weight_format);
  if (!m.method_options.empty()) doc["method_options"] = m.method_options;
  if (const auto& guide = m.prompt_guide)
    doc["prompt_guide"] = {{"grammar", guide->grammar}, {"examples", guide->examples}, {"chosen_by", guide->chosen_by}};
  if (g.condition == ConditionKind::Class) {
    doc["condition"] = {{"kind", "class"}, {"classes", m.classes}, {"null_class", g.class_null_row}};
  } else if (g.caption_source == CaptionSource::T5) {
    const T5Reference& t5 = m.t5.value();
    doc["condition"] = {{"kind", "t5"}, {"max_tokens", g.cls_token_num},
                        {"t5", {{"folder", t5.folder}, {"fingerprint", t5.fingerprint}, {"clean_captions", t5.clean_captions}}}};
    doc["target"]["caption_dim"] = g.caption_dim;
  } else {
    doc["condition"] = {{"kind", "text"}, {"vocab", m.text_vocab}, {"max_words", g.cls_token_num}};
    doc["target"]["caption_dim"] = g.caption_dim;
    doc["target"]["text_encoder_layers"] = g.text_encoder_layers;
  }
  write_text_atomically(dir + "/" + kManifestName, doc.dump(2) + "\n");
}

WeightCheck check_weights(const std::string& file, const std::vector<TensorSpec>& specs) {
  const SafetensorsFile st = SafetensorsFile::open(file);
  std::set<std::string> expected;
  for (const auto& spec : specs) {
    expected.insert(spec.name);
    const TensorInfo* t = st.find(spec.name);
    if (!t) throw Error("'" + file + "': missing tensor '" + spec.name + "' (shape " + shape_to_string(spec.shape) + ")");
    if (t->shape != spec.shape)
      throw Error("'" + file + "': tensor '" + spec.name + "' has shape " + shape_to_string(t->shape) +
                  ", the manifest implies " + shape_to_string(spec.shape));
    if (t->dtype != DType::F32 && t->dtype != DType::F16 && t->dtype != DType::BF16 && t->dtype != DType::F64)
      throw Error("'" + file + "': tensor '" + spec.name + "' has dtype " + dtype_name(t->dtype) +
                  " (allowed for weights: F32, F16, BF16, F64)");
  }
  WeightCheck check;
  for (const auto& t : st.tensors())
    if (!expected.count(t.name)) check.unexpected.push_back(t.name);
  return check;
}

}  // namespace speculum
