// LlamaGen's class-conditional checkpoints (the GPT `c2i_*.pt` and the VQ `vq_ds16_c2i.pt`, as torch.save
// wrote them) into a Speculum bundle. Every size comes from the tensors' shapes; what shapes cannot say
// (the head count of a non-standard width, the image size) comes from LlamaGen's published configurations,
// the file name, or an override. Tensor names are LlamaGen's own, so weights are copied byte for byte in
// the dtype they were stored in (F32, F16, BF16; the engine computes in F32).
#include "speculum.h"

#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "convert/imagenet_classes.h"
#include "io/bundle.h"
#include "io/t5_folder.h"
#include "io/torch_checkpoint.h"

namespace speculum {
namespace {

namespace fs = std::filesystem;

// LlamaGen's GPT configurations (autoregressive/models/gpt.py, GPT_models): head count by width and depth.
struct KnownGpt {
  const char* name;
  int dim, n_layer, n_head;
};
constexpr KnownGpt kKnownGpts[] = {
    {"GPT-B", 768, 12, 12}, {"GPT-L", 1024, 24, 16}, {"GPT-XL", 1280, 36, 20}, {"GPT-XXL", 1536, 48, 24}, {"GPT-3B", 3200, 24, 32}};

// The defaults of LlamaGen's sampling scripts (autoregressive/sample/sample_c2i.py, sample_t2i.py).
constexpr float kLlamaGenCfg = 4.0f;
constexpr int kLlamaGenTopK = 2000;
constexpr float kLlamaGenT2iCfg = 7.5f;
constexpr int kLlamaGenT2iTopK = 1000;

class Overrides {
 public:
  explicit Overrides(const std::vector<std::pair<std::string, std::string>>& pairs) {
    for (const auto& [key, value] : pairs) {
      bool known = false;
      for (const auto& [k, what] : llamagen_override_keys()) known |= k == key;
      if (!known) {
        std::string allowed;
        for (const auto& [k, what] : llamagen_override_keys()) allowed += (allowed.empty() ? "" : ", ") + k;
        throw Error("--set " + key + ": unknown key (allowed: " + allowed + ")");
      }
      values_[key] = value;
    }
  }
  std::optional<int> integer(const std::string& key) const {
    return parsed<int>(key, "an integer", [](const std::string& s, std::size_t* used) { return std::stoi(s, used); });
  }
  std::optional<double> number(const std::string& key) const {
    return parsed<double>(key, "a number", [](const std::string& s, std::size_t* used) { return std::stod(s, used); });
  }

 private:
  template <typename T, typename Parse>
  std::optional<T> parsed(const std::string& key, const char* what, Parse parse) const {
    const auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    try {
      std::size_t used = 0;
      const T v = parse(it->second, &used);
      if (used == it->second.size()) return v;
    } catch (const std::exception&) {
    }
    throw Error("--set " + key + "=" + it->second + ": not " + what);
  }

  std::map<std::string, std::string> values_;
};

struct Source {
  const TorchCheckpoint& ckpt;
  std::string where() const { return "'" + ckpt.path() + "'"; }
  const CheckpointTensor& need(const std::string& name, std::size_t dims) const {
    const CheckpointTensor* t = ckpt.find(name);
    if (!t) throw Error(where() + ": tensor '" + name + "' is missing (is this the right kind of LlamaGen checkpoint?)");
    if (t->shape().size() != dims)
      throw Error(where() + ": tensor '" + name + "' has shape " + shape_to_string(t->shape()) + ", expected " +
                  std::to_string(dims) + " dimensions");
    return *t;
  }
  int count(const std::string& prefix, const std::string& suffix) const {
    int n = 0;
    while (ckpt.find(prefix + std::to_string(n) + suffix)) ++n;
    return n;
  }
};

int dim_of(const CheckpointTensor& t, std::size_t i) { return static_cast<int>(t.shape()[i]); }

bool is_text_to_image(const TorchCheckpoint& ckpt) { return ckpt.find("cls_embedding.cap_proj.fc1.weight") != nullptr; }

// LlamaGen T2I: cap_proj over `caption_dim` T5 features, the null caption `uncond_embedding` [cls_token_num, caption_dim].
void infer_caption(const Source& src, const Overrides& set, const T5Folder& t5, GptConfig& g, ConvertReport& report) {
  for (const char* key : {"num_classes", "null_class"})
    if (set.integer(key)) throw Error(std::string("--set ") + key + ": a text-to-image GPT has no class table");
  g.condition = ConditionKind::Text;
  g.caption_source = CaptionSource::T5;
  const auto& uncond = src.need("cls_embedding.uncond_embedding", 2);
  g.cls_token_num = dim_of(uncond, 0);
  g.caption_dim = dim_of(uncond, 1);
  const auto& fc1 = src.need("cls_embedding.cap_proj.fc1.weight", 2);
  if (dim_of(fc1, 1) != g.caption_dim || dim_of(fc1, 0) != g.dim)
    throw Error(src.where() + ": 'cls_embedding.cap_proj.fc1.weight' has shape " + shape_to_string(fc1.shape()) + ", expected [" +
                std::to_string(g.dim) + ", " + std::to_string(g.caption_dim) + "] (width x caption_dim of uncond_embedding)");
  if (t5.config.d_model != g.caption_dim)
    throw Error("T5 folder '" + t5.dir + "': d_model " + std::to_string(t5.config.d_model) + " differs from the GPT's caption width " +
                std::to_string(g.caption_dim) + " (cls_embedding.uncond_embedding in " + src.where() + "): these do not belong together");
  report.lines.push_back("text-to-image: " + std::to_string(g.cls_token_num) + " caption slots of width " + std::to_string(g.caption_dim) +
                         " (from cls_embedding.uncond_embedding); CFG's null caption is uncond_embedding under the caption's mask");
}

void infer_classes(const Source& src, const Overrides& set, GptConfig& g, ConvertReport& report);

GptConfig infer_gpt(const Source& src, const Overrides& set, const T5Folder* t5, ConvertReport& report) {
  GptConfig g;
  const auto& emb = src.need("tok_embeddings.weight", 2);
  g.vocab_size = dim_of(emb, 0);
  g.dim = dim_of(emb, 1);
  g.n_layer = src.count("layers.", ".attention.wqkv.weight");
  if (g.n_layer == 0) throw Error(src.where() + ": no 'layers.0.attention.wqkv.weight' (not a LlamaGen GPT)");
  const auto& wqkv = src.need("layers.0.attention.wqkv.weight", 2);
  if (dim_of(wqkv, 0) != 3 * g.dim)
    throw Error(src.where() + ": 'layers.0.attention.wqkv.weight' has " + std::to_string(dim_of(wqkv, 0)) + " rows, not 3 x dim = " +
                std::to_string(3 * g.dim) + ": grouped-query attention (n_kv_head < n_head) is not supported");
  g.ffn_dim = dim_of(src.need("layers.0.feed_forward.w1.weight", 2), 0);

  std::string head_source = "--set n_head";
  if (auto n = set.integer("n_head")) {
    g.n_head = *n;
  } else {
    g.n_head = 0;
    for (const auto& k : kKnownGpts)
      if (k.dim == g.dim && k.n_layer == g.n_layer) g.n_head = k.n_head, head_source = std::string("LlamaGen's ") + k.name;
    if (g.n_head == 0)
      throw Error(src.where() + ": a GPT of width " + std::to_string(g.dim) + " and " + std::to_string(g.n_layer) +
                  " layers is none of LlamaGen's B/L/XL/XXL/3B, so its head count is unknown: give --set n_head=N");
  }
  if (g.n_head <= 0 || g.dim % g.n_head != 0 || (g.dim / g.n_head) % 4 != 0)
    throw Error("n_head " + std::to_string(g.n_head) + " does not split width " + std::to_string(g.dim) +
                " into heads whose size is a multiple of 4 (2D RoPE needs that)");

  if (t5) {
    infer_caption(src, set, *t5, g, report);
  } else {
    infer_classes(src, set, g, report);
  }
  if (auto v = set.number("rope_base")) g.rope_base = *v;
  if (auto v = set.number("norm_eps")) g.norm_eps = *v;
  report.lines.push_back("target: dim " + std::to_string(g.dim) + ", " + std::to_string(g.n_layer) + " layers, ffn " +
                         std::to_string(g.ffn_dim) + ", vocabulary " + std::to_string(g.vocab_size) + " (from the shapes); " +
                         std::to_string(g.n_head) + " heads (" + head_source + ")");
  return g;
}

void infer_classes(const Source& src, const Overrides& set, GptConfig& g, ConvertReport& report) {
  g.condition = ConditionKind::Class;
  g.cls_token_num = 1;
  const int rows = dim_of(src.need("cls_embedding.embedding_table.weight", 2), 0);
  std::string class_source;
  if (auto n = set.integer("num_classes")) {
    if (rows != *n && rows != *n + 1)
      throw Error("--set num_classes=" + std::to_string(*n) + ": the class table has " + std::to_string(rows) +
                  " rows (num_classes or num_classes + 1 with the null row)");
    g.num_classes = *n;
    g.class_null_row = rows == *n + 1;
    class_source = "--set num_classes";
  } else if (auto null = set.integer("null_class")) {
    if (*null != 0 && *null != 1) throw Error("--set null_class=" + std::to_string(*null) + ": allowed values are 0 and 1");
    g.class_null_row = *null != 0;
    g.num_classes = rows - (g.class_null_row ? 1 : 0);
    class_source = "--set null_class";
  } else {
    // LlamaGen trains with class dropout (a null row after the classes); a table of exactly 1,000 rows is
    // ImageNet without one.
    g.class_null_row = rows != 1000;
    g.num_classes = rows - (g.class_null_row ? 1 : 0);
    class_source = "the class table's " + std::to_string(rows) + " rows";
  }
  if (g.num_classes < 1) throw Error(src.where() + ": the class table has " + std::to_string(rows) + " rows, no class");
  report.lines.push_back("classes: " + std::to_string(g.num_classes) + (g.class_null_row ? " + the CFG null row" : ", no null row: CFG unavailable") +
                         " (from " + class_source + ")");
}

VqConfig infer_vq(const Source& src, const Overrides& set, ConvertReport& report) {
  VqConfig vq;
  const auto& codebook = src.need("quantize.embedding.weight", 2);
  vq.codebook_size = dim_of(codebook, 0);
  vq.codebook_dim = dim_of(codebook, 1);
  vq.z_channels = dim_of(src.need("post_quant_conv.weight", 4), 0);
  const int levels = src.count("decoder.conv_blocks.", ".res.0.conv2.weight");
  if (levels == 0) throw Error(src.where() + ": no 'decoder.conv_blocks.0.res.0.conv2.weight' (not a LlamaGen VQ)");
  const int decoder_blocks = src.count("decoder.conv_blocks.0.res.", ".conv2.weight");
  if (decoder_blocks < 2) throw Error(src.where() + ": the decoder's first level has fewer than two res blocks");
  vq.num_res_blocks = decoder_blocks - 1;  // LlamaGen's decoder has one more per level than the encoder
  vq.has_encoder = src.ckpt.find("encoder.conv_in.weight") != nullptr;
  std::vector<int> widths(static_cast<std::size_t>(levels));  // decoder order: lowest resolution first
  for (int i = 0; i < levels; ++i)
    widths[static_cast<std::size_t>(i)] = dim_of(src.need("decoder.conv_blocks." + std::to_string(i) + ".res.0.conv2.weight", 4), 0);
  vq.ch = vq.has_encoder ? dim_of(src.need("encoder.conv_in.weight", 4), 0) : widths.back();  // LlamaGen's ch_mult starts at 1
  vq.ch_mult.clear();
  for (int i = levels - 1; i >= 0; --i) {
    const int w = widths[static_cast<std::size_t>(i)];
    if (vq.ch <= 0 || w % vq.ch != 0)
      throw Error(src.where() + ": decoder level " + std::to_string(i) + " is " + std::to_string(w) + " channels wide, not a multiple of ch " +
                  std::to_string(vq.ch));
    vq.ch_mult.push_back(w / vq.ch);
  }
  vq.norm_groups = set.integer("norm_groups").value_or(32);
  std::string mult;
  for (int m : vq.ch_mult) mult += (mult.empty() ? "" : ",") + std::to_string(m);
  report.lines.push_back("tokenizer: codebook " + std::to_string(vq.codebook_size) + " x " + std::to_string(vq.codebook_dim) + ", z " +
                         std::to_string(vq.z_channels) + ", ch " + std::to_string(vq.ch) + ", ch_mult [" + mult + "], " +
                         std::to_string(vq.num_res_blocks) + " res blocks, downsampling " + std::to_string(vq.downsample_factor()) +
                         (vq.has_encoder ? ", with encoder" : ", decoder only") + " (from the shapes)");
  return vq;
}

// The image size: an override, the grid, or the "_256" / "_384" in LlamaGen's file names; else 256.
int infer_image_size(const ConvertParams& params, const Overrides& set, int downsample, ConvertReport& report) {
  std::string source;
  int size = 0;
  if (auto s = set.integer("image_size")) {
    size = *s, source = "--set image_size";
  } else if (auto grid = set.integer("grid")) {
    if (*grid <= 0) throw Error("--set grid=" + std::to_string(*grid) + ": the token grid side must be positive");
    size = *grid * downsample, source = "--set grid";
  } else {
    std::smatch match;
    const std::string stem = fs::path(params.gpt_path).stem().string();
    static const std::regex kSize("_(128|192|256|384|448|512|768|1024)(?:_|$)");
    if (std::regex_search(stem, match, kSize)) {
      size = std::stoi(match[1]), source = "the file name '" + stem + "'";
    } else {
      size = 256, source = "LlamaGen's default; the file name does not say, --set image_size=N overrides";
    }
  }
  if (size <= 0 || size % downsample != 0)
    throw Error("image size " + std::to_string(size) + " is not a positive multiple of the tokenizer's downsampling " + std::to_string(downsample));
  report.lines.push_back("image: " + std::to_string(size) + " px, grid " + std::to_string(size / downsample) + "x" +
                         std::to_string(size / downsample) + " (from " + source + ")");
  return size;
}

// Reads the tensors `specs` names from `ckpt`, checks shapes and dtypes, and writes them unchanged to `path`.
void copy_tensors(const TorchCheckpoint& ckpt, const std::vector<TensorSpec>& specs, const std::string& path, const std::string& owner,
                  ConvertReport& report) {
  std::vector<std::vector<std::uint8_t>> data;
  std::vector<TensorToWrite> out;
  std::set<std::string> used;
  std::map<std::string, int> dtypes;
  data.reserve(specs.size());
  for (const auto& spec : specs) {
    const CheckpointTensor* t = ckpt.find(spec.name);
    if (!t) throw Error("'" + ckpt.path() + "': tensor '" + spec.name + "' (shape " + shape_to_string(spec.shape) + ") is missing for the " + owner);
    if (t->shape() != spec.shape)
      throw Error("'" + ckpt.path() + "': tensor '" + spec.name + "' has shape " + shape_to_string(t->shape()) + "; the inferred " + owner +
                  " needs " + shape_to_string(spec.shape));
    if (t->dtype() != DType::F32 && t->dtype() != DType::F16 && t->dtype() != DType::BF16 && t->dtype() != DType::F64)
      throw Error("'" + ckpt.path() + "': tensor '" + spec.name + "' is " + dtype_name(t->dtype()) + " (weights must be F32, F16, BF16 or F64)");
    data.push_back(ckpt.read(*t));
    out.push_back({spec.name, t->dtype(), t->shape(), data.back().data(), data.back().size()});
    used.insert(spec.name);
    ++dtypes[dtype_name(t->dtype())];
  }
  std::string kinds;
  for (const auto& [name, n] : dtypes) kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  report.lines.push_back(owner + ": " + std::to_string(out.size()) + " tensors kept as stored (" + kinds + ")");
  for (const auto& t : ckpt.tensors())
    if (!used.count(t.name)) report.lines.push_back(owner + ": left out '" + t.name + "' " + shape_to_string(t.shape()) + " (not used for inference)");
  write_safetensors(path, out, {{"converted_from", fs::path(ckpt.path()).filename().string()}});
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& llamagen_override_keys() {
  static const std::vector<std::pair<std::string, std::string>> keys = {
      {"n_head", "attention heads (needed when the width is none of LlamaGen's B/L/XL/XXL/3B)"},
      {"num_classes", "classes; the class table has this many rows, or one more (the CFG null row)"},
      {"null_class", "1: the class table's last row is the CFG null class; 0: no null row (CFG unavailable)"},
      {"image_size", "image side in pixels (default: from the file name, e.g. c2i_B_384.pt, else 256)"},
      {"grid", "token grid side (instead of image_size)"},
      {"rope_base", "RoPE base (LlamaGen: 10000)"},
      {"norm_eps", "RMSNorm epsilon (LlamaGen: 1e-5)"},
      {"norm_groups", "the tokenizer's GroupNorm groups (LlamaGen: 32)"},
      {"cfg", "the bundle's recommended CFG scale (LlamaGen's sampling scripts: 4 for c2i, 7.5 for t2i)"},
      {"top_k", "the bundle's recommended top-k (LlamaGen's sampling scripts: 2000 for c2i, 1000 for t2i)"},
  };
  return keys;
}

ConvertReport convert_llamagen(const ConvertParams& params) {
  if (params.gpt_path.empty() || params.vq_path.empty() || params.out_dir.empty())
    throw Error("convert llamagen needs the GPT checkpoint, the VQ checkpoint and an output folder");
  if (fs::exists(params.out_dir)) throw Error("'" + params.out_dir + "' exists already; choose a new output folder");
  const Overrides set(params.overrides);
  ConvertReport report;
  report.out_dir = params.out_dir;

  const TorchCheckpoint gpt = TorchCheckpoint::open(params.gpt_path, params.state_key);
  const TorchCheckpoint vq_ckpt = TorchCheckpoint::open(params.vq_path, params.state_key);
  for (const auto& note : gpt.notes()) report.lines.push_back("GPT checkpoint: " + note);
  for (const auto& note : vq_ckpt.notes()) report.lines.push_back("VQ checkpoint: " + note);
  const bool t2i = is_text_to_image(gpt);
  if (t2i && params.t5_dir.empty())
    throw Error("'" + params.gpt_path + "' is a text-to-image LlamaGen GPT (it has cls_embedding.cap_proj): give its T5 encoder with "
                "--t5 FLAN_T5_DIR (a Hugging Face folder with config.json, spiece.model and the weights)");
  if (!t2i && !params.t5_dir.empty())
    throw Error("'" + params.gpt_path + "' is a class-conditional LlamaGen GPT (no cls_embedding.cap_proj): it takes no --t5 encoder");
  std::optional<T5Folder> t5;
  if (t2i) {
    t5 = open_t5_folder(params.t5_dir);
    report.lines.push_back("T5: " + t5_fingerprint(*t5) + " (" + t5_layout_name(t5->layout) + ", " + std::to_string(t5->weight_bytes) +
                           " bytes of weights; the bundle refers to the folder, it does not copy it)");
  }

  BundleManifest m;
  m.name = params.name.empty() ? "llamagen-" + fs::path(params.gpt_path).stem().string() : params.name;
  m.target = infer_gpt(Source{gpt}, set, t5 ? &*t5 : nullptr, report);
  m.tokenizer = infer_vq(Source{vq_ckpt}, set, report);
  GptConfig& g = m.target;
  if (g.vocab_size != m.tokenizer.codebook_size)
    throw Error("the GPT's vocabulary (" + std::to_string(g.vocab_size) + ") differs from the VQ's codebook (" +
                std::to_string(m.tokenizer.codebook_size) + "): these checkpoints do not belong together");
  m.image_size = infer_image_size(params, set, m.tokenizer.downsample_factor(), report);
  g.grid_rows = g.grid_cols = m.image_size / m.tokenizer.downsample_factor();
  validate_config(g);
  validate_config(m.tokenizer);
  if (t2i) {
    std::error_code ec;
    m.t5 = T5Reference{fs::absolute(params.t5_dir, ec).lexically_normal().string(), t5_fingerprint(*t5), true};
    if (m.t5->folder.size() > 1 && m.t5->folder.back() == '/') m.t5->folder.pop_back();
    m.sampling.cfg_scale = static_cast<float>(set.number("cfg").value_or(kLlamaGenT2iCfg));
    m.sampling.top_k = set.integer("top_k").value_or(g.vocab_size > kLlamaGenT2iTopK ? kLlamaGenT2iTopK : 0);
  } else {
    if (g.num_classes == static_cast<int>(imagenet_class_names().size())) {
      m.classes = imagenet_class_names();
      report.lines.push_back("class names: ImageNet-1k");
    } else {
      for (int i = 0; i < g.num_classes; ++i) m.classes.push_back("class " + std::to_string(i));
    }
    m.sampling.cfg_scale = g.class_null_row ? static_cast<float>(set.number("cfg").value_or(kLlamaGenCfg)) : 1.0f;
    m.sampling.top_k = set.integer("top_k").value_or(g.vocab_size > kLlamaGenTopK ? kLlamaGenTopK : 0);
  }
  m.sampling.validate();
  m.target_weights = "target.safetensors";
  m.tokenizer_weights = "vq.safetensors";

  // Written beside the destination, then renamed into place: a failed conversion leaves nothing behind.
  const fs::path out(params.out_dir);
  const fs::path partial = out.parent_path() / (out.filename().string() + ".partial");
  fs::remove_all(partial);
  fs::create_directories(partial);
  try {
    copy_tensors(gpt, gpt_tensor_specs(g), (partial / m.target_weights).string(), "target", report);
    copy_tensors(vq_ckpt, vq_tensor_specs(m.tokenizer), (partial / m.tokenizer_weights).string(), "tokenizer", report);
    write_manifest(m, partial.string());
    read_manifest(partial.string());  // the bundle must load as written
    fs::rename(partial, out);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(partial, ignored);
    throw;
  }
  return report;
}

}  // namespace speculum
