#include "train/target_trainer.h"

#include <c10/core/InferenceMode.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "error.h"
#include "io/bundle.h"
#include "io/json_fields.h"
#include "models/device.h"
#include "models/random_weights.h"
#include "sampling/counter_rng.h"

namespace speculum {

void TokenizedCorpus::save(const std::string& path, int max_words) const {
  const auto n = size();
  at::Tensor word_table = at::full({n, max_words}, -1, at::kInt);
  for (std::int64_t i = 0; i < n; ++i) {
    if (static_cast<int>(words[i].size()) > max_words) throw Error("a caption has more than " + std::to_string(max_words) + " words");
    for (std::size_t j = 0; j < words[i].size(); ++j) word_table[i][j] = words[i][j];
  }
  std::string joined;
  for (const auto& w : vocabulary) joined += (joined.empty() ? "" : "\n") + w;
  TensorMap tensors = {{"codes", codes.to(at::kInt)}, {"words", word_table}};
  if (!classes.empty()) tensors["classes"] = at::tensor(classes, at::kInt);
  if (object_share.defined()) tensors["object_share"] = (object_share * 255).round().clamp(0, 255).to(at::kByte);
  if (!passed.empty()) {
    if (static_cast<std::int64_t>(passed.size()) != n) throw Error("a corpus needs one verdict per image");
    tensors["passed"] = at::tensor(std::vector<std::uint8_t>(passed.begin(), passed.end()), at::kByte);
  }
  std::map<std::string, std::string> metadata = {{"vocabulary", joined}};
  if (!captions.empty()) metadata["captions"] = nlohmann::json(captions).dump();
  save_tensors(path, tensors, DType::F32, metadata);
}

TokenizedCorpus TokenizedCorpus::load(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path, "corpus");
  const TensorInfo* codes = file.find("codes");
  const TensorInfo* words = file.find("words");
  if (!codes || !words || codes->dtype != DType::I32 || words->dtype != DType::I32 || codes->shape.size() != 2 ||
      words->shape.size() != 2 || codes->shape[0] != words->shape[0])
    throw Error("'" + path + "' is not a tokenised corpus (needs I32 'codes' [N, tokens] and 'words' [N, max_words])");
  auto view = [&](const TensorInfo* t) {
    return at::from_blob(const_cast<std::uint8_t*>(file.data(*t)), t->shape, at::kInt).clone();
  };
  TokenizedCorpus corpus;
  corpus.codes = view(codes).to(at::kLong);
  if (const TensorInfo* share = file.find("object_share")) {
    if (share->dtype != DType::U8 || share->shape != codes->shape)
      throw Error("'" + path + "': 'object_share' must be U8 of the shape of 'codes' " + shape_to_string(codes->shape));
    corpus.object_share = at::from_blob(const_cast<std::uint8_t*>(file.data(*share)), share->shape, at::kByte).to(at::kFloat) / 255;
  }
  if (const TensorInfo* classes = file.find("classes")) {
    if (classes->dtype != DType::I32 || classes->shape != std::vector<std::int64_t>{codes->shape[0]})
      throw Error("'" + path + "': 'classes' must be I32 [" + std::to_string(codes->shape[0]) + "], one per image");
    const at::Tensor ids = view(classes);
    corpus.classes.assign(ids.data_ptr<int>(), ids.data_ptr<int>() + ids.numel());
  }
  if (const TensorInfo* passed = file.find("passed")) {
    if (passed->dtype != DType::U8 || passed->shape != std::vector<std::int64_t>{codes->shape[0]})
      throw Error("'" + path + "': 'passed' must be U8 [" + std::to_string(codes->shape[0]) + "], a verdict per image");
    const std::uint8_t* verdicts = file.data(*passed);
    for (std::int64_t i = 0; i < codes->shape[0]; ++i) {
      if (verdicts[i] > 1) throw Error("'" + path + "': 'passed' holds " + std::to_string(verdicts[i]) + "; a verdict is 0 or 1");
      corpus.passed.push_back(static_cast<char>(verdicts[i]));
    }
  }
  if (const auto it = file.metadata().find("vocabulary"); it != file.metadata().end()) {
    std::istringstream lines(it->second);
    for (std::string w; std::getline(lines, w);) corpus.vocabulary.push_back(w);
  }
  if (const auto it = file.metadata().find("captions"); it != file.metadata().end()) {
    const nlohmann::json list = parse_untrusted_json(it->second, path + " (captions)", 2);
    if (!list.is_array() || static_cast<std::int64_t>(list.size()) != codes->shape[0])
      throw Error("'" + path + "': metadata 'captions' must be a JSON array of " + std::to_string(codes->shape[0]) + " strings, one per image");
    for (const auto& caption : list) {
      if (!caption.is_string()) throw Error("'" + path + "': metadata 'captions' holds a value that is not a string");
      corpus.captions.push_back(caption.get<std::string>());
    }
  }
  const at::Tensor table = view(words);
  for (std::int64_t i = 0; i < table.size(0); ++i) {
    std::vector<int> ids;
    for (std::int64_t j = 0; j < table.size(1); ++j)
      if (const int id = table[i][j].item<int>(); id >= 0) ids.push_back(id);
    corpus.words.push_back(std::move(ids));
  }
  return corpus;
}

TokenizedCorpus load_corpora(const std::vector<std::string>& paths) {
  if (paths.empty()) throw Error("no training corpus given");
  TokenizedCorpus all;
  std::vector<at::Tensor> codes, shares;
  bool any_share = false;
  for (const auto& path : paths) {
    TokenizedCorpus part = TokenizedCorpus::load(path);
    if (!codes.empty() && part.codes.size(1) != codes.front().size(1))
      throw Error("'" + path + "' has " + std::to_string(part.codes.size(1)) + " tokens per image; '" + paths.front() +
                  "' has " + std::to_string(codes.front().size(1)));
    for (std::size_t i = 0; i < std::min(part.vocabulary.size(), all.vocabulary.size()); ++i)
      if (part.vocabulary[i] != all.vocabulary[i])
        throw Error("'" + path + "' numbers its words differently from the corpora before it (word " + std::to_string(i) +
                    ": '" + part.vocabulary[i] + "' vs '" + all.vocabulary[i] + "')");
    if (part.vocabulary.size() > all.vocabulary.size()) all.vocabulary = part.vocabulary;
    codes.push_back(part.codes);
    shares.push_back(part.object_share.defined() ? part.object_share : at::zeros(part.codes.sizes(), at::kFloat));
    any_share = any_share || part.object_share.defined();
    if (codes.size() > 1 && part.classes.empty() != all.classes.empty())
      throw Error("'" + path + "' " + (part.classes.empty() ? "has no classes" : "has classes") + ", unlike '" + paths.front() + "'");
    if (codes.size() > 1 && part.captions.empty() != all.captions.empty())
      throw Error("'" + path + "' " + (part.captions.empty() ? "has no caption texts" : "has caption texts") + ", unlike '" +
                  paths.front() + "'");
    if (codes.size() > 1 && part.passed.empty() != all.passed.empty())
      throw Error("'" + path + "' " + (part.passed.empty() ? "has no verdicts" : "has verdicts") + ", unlike '" + paths.front() + "'");
    all.passed.insert(all.passed.end(), part.passed.begin(), part.passed.end());
    all.captions.insert(all.captions.end(), part.captions.begin(), part.captions.end());
    for (auto& w : part.words) all.words.push_back(std::move(w));
    all.classes.insert(all.classes.end(), part.classes.begin(), part.classes.end());
  }
  all.codes = at::cat(codes);
  if (any_share) all.object_share = at::cat(shares);  // a corpus without shares weighs as background
  return all;
}

void check_corpus(const TokenizedCorpus& corpus, const GptConfig& config) {
  if (corpus.size() == 0) throw Error("the training corpus is empty");
  if (corpus.codes.size(1) != config.image_tokens())
    throw Error("corpus images have " + std::to_string(corpus.codes.size(1)) + " tokens; the model's grid has " +
                std::to_string(config.image_tokens()));
  const bool class_model = config.condition == ConditionKind::Class;
  if (class_model && static_cast<std::int64_t>(corpus.classes.size()) != corpus.size())
    throw Error("a class-conditioned model trains on a corpus with a class per image (train samples writes one)");
  if (!class_model && !corpus.classes.empty())
    throw Error("the corpus holds class ids, but the model is text-conditioned");
  for (const int c : corpus.classes)
    if (c < 0 || c >= config.num_classes)
      throw Error("the corpus has class " + std::to_string(c) + ", outside the model's [0, " + std::to_string(config.num_classes) + ")");
  const bool t5_model = !class_model && config.caption_source == CaptionSource::T5;
  if (t5_model && static_cast<std::int64_t>(corpus.captions.size()) != corpus.size())
    throw Error("a T5-conditioned model trains on a corpus with a caption text per image (train samples --prompts writes one)");
  if (!t5_model && !corpus.captions.empty())
    throw Error("the corpus holds caption texts for T5, but the model reads " + std::string(class_model ? "classes" : "vocabulary words"));
}

PreferencePairs preference_pairs(const TokenizedCorpus& judged) {
  if (judged.passed.empty()) throw Error("preference pairs need a corpus with the checker's verdicts (train samples --verdicts)");
  std::map<std::vector<int>, std::size_t> caption_index;
  std::vector<std::vector<std::int64_t>> passed, failed;
  for (std::int64_t i = 0; i < judged.size(); ++i) {
    const auto [at, added] = caption_index.try_emplace(judged.words.at(static_cast<std::size_t>(i)), passed.size());
    if (added) passed.emplace_back(), failed.emplace_back();
    (judged.passed[static_cast<std::size_t>(i)] ? passed : failed)[at->second].push_back(i);
  }
  PreferencePairs pairs;
  for (std::size_t c = 0; c < passed.size(); ++c)
    if (!passed[c].empty() && !failed[c].empty()) pairs.passed.push_back(passed[c]), pairs.failed.push_back(failed[c]);
  if (pairs.captions() == 0)
    throw Error("no caption of the judged corpus has both a passing and a failing image (draw several per caption: "
                "train samples --per-caption K)");
  return pairs;
}

namespace {

// One of n choices, uniform, from the Data stream's draw at (step, slot): the batch's rows, foils and pairs.
std::size_t data_index(std::uint64_t seed, int step, std::uint64_t slot, std::size_t n) {
  return std::min(n - 1, static_cast<std::size_t>(counter_uniform(seed, RngStream::Data, step, slot) * static_cast<double>(n)));
}

}  // namespace

CorpusBatch corpus_batch(const TokenizedCorpus& corpus, int batch, double caption_dropout, std::uint64_t seed, int step,
                         int slots_per_row) {
  CorpusBatch b;
  for (int i = 0; i < batch; ++i) {
    const auto slot = static_cast<std::uint64_t>(slots_per_row) * i;
    b.rows.push_back(static_cast<std::int64_t>(data_index(seed, step, slot, static_cast<std::size_t>(corpus.size()))));
    b.null_caption.push_back(counter_uniform(seed, RngStream::Data, step, slot + 1) < caption_dropout);
  }
  return b;
}

namespace {

// Teacher-forced hidden states [rows, tokens, dim] of the corpus images `rows` (Transformer::forward_teacher_hidden),
// and their tokens.
std::pair<at::Tensor, at::Tensor> teacher_hidden(const Transformer& model, const TokenizedCorpus& corpus,
                                                 const std::vector<std::int64_t>& rows, const std::vector<bool>& null_caption) {
  const at::Tensor tokens = corpus.codes.index_select(0, at::tensor(rows, at::kLong)).to(model.device());
  if (model.config().condition == ConditionKind::Class) {
    std::vector<int> classes;
    for (auto r : rows) classes.push_back(corpus.classes.at(r));
    const auto [prefix, attendable] = model.class_batch(classes, null_caption);
    return {model.forward_teacher_hidden(prefix, attendable, tokens), tokens};
  }
  if (model.config().caption_source == CaptionSource::T5) {
    if (corpus.caption_features.size() != corpus.captions.size() || corpus.captions.empty())
      throw Error("the corpus's captions have no T5 features (encode_corpus_captions runs when a trainer loads it)");
    std::vector<at::Tensor> features;
    std::vector<std::vector<char>> slots;
    for (auto r : rows) {
      features.push_back(corpus.caption_features.at(r));
      slots.push_back(corpus.caption_slots.at(r));
    }
    const auto [prefix, attendable] = model.encoded_caption_batch(features, slots, null_caption);
    return {model.forward_teacher_hidden(prefix, attendable, tokens), tokens};
  }
  std::vector<std::vector<int>> words;
  for (auto r : rows) words.push_back(corpus.words.at(r));
  const auto [prefix, attendable] = model.caption_batch(words, null_caption);
  return {model.forward_teacher_hidden(prefix, attendable, tokens), tokens};
}

// Teacher-forced logits [rows, tokens, vocab] of the corpus images `rows`, and their tokens.
std::pair<at::Tensor, at::Tensor> teacher_logits(const Transformer& model, const TokenizedCorpus& corpus,
                                                 const std::vector<std::int64_t>& rows, const std::vector<bool>& null_caption) {
  const auto [hidden, tokens] = teacher_hidden(model, corpus, rows, null_caption);
  return {model.head(hidden), tokens};
}

}  // namespace

namespace {

// A batch's object shares [B, N] (undefined when the corpus has none) and, when asked for, its object tops [B, N]
// (object_tops), computed once per step for the token loss and the caption contrast.
struct BatchObjects {
  at::Tensor shares, tops;
};

BatchObjects batch_objects(const TokenizedCorpus& corpus, const std::vector<std::int64_t>& rows, const GptConfig& config,
                           bool with_tops) {
  if (!corpus.object_share.defined()) return {};
  const at::Tensor shares = corpus.object_share.index_select(0, at::tensor(rows, at::kLong));
  return {shares, with_tops ? object_tops(shares, config.grid_rows, config.grid_cols) : at::Tensor()};
}

// The next-token loss of teacher-forced logits (TargetTrainParams::object_weight, tops_weight).
at::Tensor token_loss(const at::Tensor& logits, const at::Tensor& tokens, const BatchObjects& objects, double object_weight,
                      double tops_weight) {
  if ((object_weight <= 0 && tops_weight <= 0) || !objects.shares.defined())
    return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), tokens.reshape({-1}));
  const at::Tensor per_token = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), tokens.reshape({-1}), {},
                                                      at::Reduction::None);
  at::Tensor weights = 1 + object_weight * objects.shares;
  if (tops_weight > 0) weights = weights + tops_weight * objects.tops;
  weights = weights.reshape({-1}).to(per_token.device());
  return (per_token * weights).sum() / weights.sum();
}

// The caption reader of TargetTrainParams::caption_reading: word logits = weight [V, dim] · pooled hidden + bias [V].
struct CaptionReader {
  at::Tensor weight, bias;
  static constexpr const char* kFile = "caption_reader.safetensors";

  // Small weights and each word's log-odds in the corpus as the bias, so that the loss starts at the bag's entropy
  // rather than at V·log 2 (which would swamp the token loss until the bias had learned the word frequencies).
  static CaptionReader fresh(const TokenizedCorpus& corpus, std::int64_t dim, std::uint64_t seed) {
    const auto vocabulary = static_cast<std::int64_t>(corpus.vocabulary.size());
    std::vector<double> captions_with(static_cast<std::size_t>(vocabulary), 0.0);
    for (const auto& caption : corpus.words) {
      std::vector<bool> seen(static_cast<std::size_t>(vocabulary), false);
      for (const int w : caption)
        if (w >= 0 && w < vocabulary && !seen[w]) seen[w] = true, captions_with[w] += 1;
    }
    const at::Tensor share = ((at::tensor(captions_with, at::kDouble) + 0.5) / (static_cast<double>(corpus.size()) + 1.0)).to(at::kFloat);
    at::manual_seed(seed);
    return {at::randn({vocabulary, dim}) * 0.02, at::log(share / (1 - share))};
  }
};

// The caption-reading loss (TargetTrainParams::caption_reading) on teacher-forced hidden states [B, N, dim] after the
// final norm (the scale the output head reads): summed over the vocabulary, averaged over the images that take part;
// 0 when none does.
at::Tensor caption_reading_loss(const at::Tensor& hidden, const GptConfig& config, const TokenizedCorpus& corpus,
                                const std::vector<std::int64_t>& rows, const std::vector<bool>& null_caption,
                                const CaptionReader& reader) {
  const std::int64_t vocabulary = reader.weight.size(0);
  std::vector<at::Tensor> pooled, bags;
  for (std::size_t b = 0; b < rows.size(); ++b) {
    if (null_caption[b]) continue;
    const at::Tensor rows_with_object =
        (corpus.object_share[rows[b]].view({config.grid_rows, config.grid_cols}) >= 0.25).any(1).nonzero();
    if (rows_with_object.numel() == 0) continue;
    const std::int64_t first = rows_with_object[0][0].item<std::int64_t>();
    pooled.push_back(hidden[static_cast<std::int64_t>(b)].narrow(0, first * config.grid_cols, config.grid_cols).mean(0));
    at::Tensor bag = at::zeros({vocabulary});
    for (const int w : corpus.words[rows[b]])
      if (w >= 0 && w < vocabulary) bag[w] = 1.0f;
    bags.push_back(bag);
  }
  if (pooled.empty()) return at::zeros({}, hidden.options());
  const at::Tensor logits = at::linear(at::stack(pooled), reader.weight, reader.bias);
  const at::Tensor bag = at::stack(bags).to(logits.device());
  return at::binary_cross_entropy_with_logits(logits, bag, {}, {}, at::Reduction::Sum) / static_cast<double>(pooled.size());
}

}  // namespace

Foils draw_foils(const FoilTable& replace, const FoilTable& exchange, double exchange_share, double copy_share,
                 const TokenizedCorpus& corpus, const CorpusBatch& batch, std::uint64_t seed, int step) {
  constexpr std::uint64_t kFoilSlots = 1ull << 32;       // far past any batch's row and dropout slots
  constexpr std::uint64_t kExchangeSlots = 1ull << 33;   // and past the replacements' (so adding exchanges moved none)
  const auto in_table = [](const FoilTable& table, int id) {
    return id >= 0 && id < static_cast<int>(table.group_of.size()) && table.group_of[static_cast<std::size_t>(id)] >= 0;
  };
  Foils foils;
  for (std::size_t b = 0; b < batch.rows.size(); ++b) {
    if (batch.null_caption[b]) continue;
    const std::vector<int>& caption = corpus.words.at(static_cast<std::size_t>(batch.rows[b]));
    const auto draw = [&](std::uint64_t slot, std::size_t n) { return data_index(seed, step, slot, n); };
    std::vector<std::pair<std::size_t, std::size_t>> pairs;  // two different words of one exchange group
    for (std::size_t i = 0; i < caption.size(); ++i)
      for (std::size_t j = i + 1; j < caption.size(); ++j)
        if (in_table(exchange, caption[i]) && caption[i] != caption[j] && in_table(exchange, caption[j]) &&
            exchange.group_of[static_cast<std::size_t>(caption[i])] == exchange.group_of[static_cast<std::size_t>(caption[j])])
          pairs.emplace_back(i, j);
    const double u = pairs.empty() || exchange_share + copy_share <= 0
                         ? 1.0
                         : counter_uniform(seed, RngStream::Data, step, kExchangeSlots + 2 * b);
    if (u < exchange_share + copy_share) {
      // One draw picks the pair and, for a copy, its direction; with copy_share 0 it picks the pair as it always did.
      const std::size_t k = draw(kExchangeSlots + 2 * b + 1, (u < exchange_share ? 1 : 2) * pairs.size());
      const auto [i, j] = pairs[k % pairs.size()];
      std::vector<int> foil = caption;
      if (u < exchange_share) std::swap(foil[i], foil[j]);
      else if (k < pairs.size()) foil[j] = caption[i];
      else foil[i] = caption[j];
      foils.batch_rows.push_back(static_cast<std::int64_t>(b));
      foils.words.push_back(std::move(foil));
      continue;
    }
    std::vector<std::size_t> swappable;
    for (std::size_t i = 0; i < caption.size(); ++i)
      if (in_table(replace, caption[i])) swappable.push_back(i);
    if (swappable.empty()) continue;
    const std::size_t position = swappable[draw(kFoilSlots + 2 * b, swappable.size())];
    const std::vector<int>& group = replace.group_ids[static_cast<std::size_t>(replace.group_of[caption[position]])];
    std::vector<int> others;
    for (const int id : group)
      if (id != caption[position]) others.push_back(id);
    std::vector<int> foil = caption;
    foil[position] = others[draw(kFoilSlots + 2 * b + 1, others.size())];
    foils.batch_rows.push_back(static_cast<std::int64_t>(b));
    foils.words.push_back(std::move(foil));
  }
  return foils;
}

FoilTable FoilTable::of(const std::vector<std::string>& vocabulary, const std::vector<std::vector<std::string>>& groups) {
  FoilTable table{std::vector<int>(vocabulary.size(), -1), {}};
  for (const auto& group : groups) {
    std::vector<int> ids;
    for (const auto& word : group) {
      const auto at = std::find(vocabulary.begin(), vocabulary.end(), word);
      if (at != vocabulary.end()) ids.push_back(static_cast<int>(at - vocabulary.begin()));
    }
    if (ids.size() < 2) continue;  // nothing to swap with
    for (const int id : ids) table.group_of[static_cast<std::size_t>(id)] = static_cast<int>(table.group_ids.size());
    table.group_ids.push_back(ids);
  }
  return table;
}

at::Tensor object_tops(const at::Tensor& shares, std::int64_t rows, std::int64_t cols) {
  const at::Tensor covered = (shares >= 0.05).view({-1, rows, cols});
  const at::Tensor above = at::cat({at::zeros_like(covered.narrow(1, 0, 1)), covered.narrow(1, 0, rows - 1)}, 1);
  const at::Tensor tops = covered & ~above;
  const at::Tensor below_tops = at::cat({at::zeros_like(tops.narrow(1, 0, 1)), tops.narrow(1, 0, rows - 1)}, 1);
  return (tops | below_tops).view({shares.size(0), -1}).to(at::kFloat);
}

namespace {

// log p of each token [B, N] under teacher-forced logits [B, N, V].
at::Tensor token_log_p(const at::Tensor& logits, const at::Tensor& tokens) {
  return at::log_softmax(logits.to(at::kFloat), -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1);
}

// The caption-contrast loss (TargetTrainParams::caption_contrast) and the mean Δ (nats by which the true captions
// explain their images — or, with a mask [B, N], the masked tokens — better than the foils): the log-probabilities
// under the true captions come from the step's own logits [B, N, V]; under the foils, from one more teacher-forced pass.
std::pair<at::Tensor, double> caption_contrast_loss(const Transformer& model, const at::Tensor& logits, const at::Tensor& tokens,
                                                    Foils foils, const at::Tensor& mask) {
  if (mask.defined()) {  // images without an object top take no part
    Foils kept;
    for (std::size_t i = 0; i < foils.batch_rows.size(); ++i)
      if (mask[foils.batch_rows[i]].sum().item<double>() > 0)
        kept.batch_rows.push_back(foils.batch_rows[i]), kept.words.push_back(std::move(foils.words[i]));
    foils = std::move(kept);
  }
  if (foils.batch_rows.empty()) return {at::zeros({}, logits.options()), 0.0};
  const at::Tensor index = at::tensor(foils.batch_rows, at::kLong).to(logits.device());
  const at::Tensor foil_tokens = tokens.index_select(0, index);
  const auto [prefix, attendable] = model.caption_batch(foils.words, std::vector<bool>(foils.words.size(), false));
  const at::Tensor foil_logits = model.head(model.forward_teacher_hidden(prefix, attendable, foil_tokens));
  const at::Tensor weights = mask.defined() ? mask.index_select(0, index.cpu()).to(logits.device()) : at::ones_like(foil_tokens, at::kFloat);
  const auto log_p = [&](const at::Tensor& l) { return (token_log_p(l, foil_tokens) * weights).sum(1); };
  const at::Tensor delta = log_p(logits.index_select(0, index)) - log_p(foil_logits);
  return {at::softplus(-delta).mean(), delta.mean().item<double>()};
}

// The preference loss (TargetTrainParams::preference) on this step's pairs, and their mean margin in nats: how much
// more the model gained on the passing images than on the failing ones, since the reference.
std::pair<at::Tensor, double> preference_loss(const Transformer& model, const Transformer& reference, const TokenizedCorpus& judged,
                                              const PreferencePairs& pairs, const TargetTrainParams& params, int step) {
  constexpr std::uint64_t kPreferenceSlots = 1ull << 34;  // past the batch's, the foils' and the exchanges' draws
  const auto draw = [&](std::uint64_t slot, std::size_t n) { return data_index(params.seed, step, kPreferenceSlots + slot, n); };
  const int n = params.preference_pairs;
  std::vector<std::int64_t> rows(2 * static_cast<std::size_t>(n));  // the passing images, then the failing ones
  for (int k = 0; k < n; ++k) {
    const std::size_t c = draw(3 * k, pairs.captions());
    rows[k] = pairs.passed[c][draw(3 * k + 1, pairs.passed[c].size())];
    rows[n + k] = pairs.failed[c][draw(3 * k + 2, pairs.failed[c].size())];
  }
  const std::vector<bool> captioned(rows.size(), false);
  const auto [logits, tokens] = teacher_logits(model, judged, rows, captioned);
  at::Tensor reference_log_p;
  {
    at::NoGradGuard no_grad;
    const auto [reference_logits, same_tokens] = teacher_logits(reference, judged, rows, captioned);
    reference_log_p = token_log_p(reference_logits, same_tokens).sum(1);
  }
  const at::Tensor gain = token_log_p(logits, tokens).sum(1) - reference_log_p;
  const at::Tensor margin = gain.narrow(0, 0, n) - gain.narrow(0, n, n);
  return {at::softplus(-params.preference_beta * margin).mean(), margin.mean().item<double>()};
}

}  // namespace

at::Tensor target_loss(const Transformer& model, const TokenizedCorpus& corpus, const std::vector<std::int64_t>& rows,
                       const std::vector<bool>& null_caption, double object_weight, double tops_weight) {
  const auto [logits, tokens] = teacher_logits(model, corpus, rows, null_caption);
  return token_loss(logits, tokens, batch_objects(corpus, rows, model.config(), tops_weight > 0), object_weight, tops_weight);
}

at::Tensor teacher_features(const Transformer& target, const TokenizedCorpus& corpus, const std::vector<std::int64_t>& rows,
                            const std::vector<bool>& null_caption, at::Tensor& tokens) {
  at::NoGradGuard no_grad;
  auto [hidden, teacher_tokens] = teacher_hidden(target, corpus, rows, null_caption);
  tokens = teacher_tokens;
  return hidden;
}

void for_each_teacher_batch(const Transformer& target, const TokenizedCorpus& corpus, int images,
                            const std::function<void(const at::Tensor& features, const at::Tensor& tokens)>& body) {
  const std::int64_t n = std::min<std::int64_t>(images, corpus.size());
  for (std::int64_t i = 0; i < n; i += 16) {
    std::vector<std::int64_t> rows;
    for (std::int64_t j = i; j < std::min<std::int64_t>(i + 16, n); ++j) rows.push_back(j);
    at::Tensor tokens;
    const at::Tensor h = teacher_features(target, corpus, rows, std::vector<bool>(rows.size(), false), tokens);
    body(h, tokens);
  }
}

at::Tensor next_token_entropy(const Transformer& model, const TokenizedCorpus& corpus, const std::vector<std::int64_t>& rows) {
  const auto [logits, tokens] = teacher_logits(model, corpus, rows, std::vector<bool>(rows.size(), false));
  const at::Tensor log_p = at::log_softmax(logits.to(at::kFloat), -1);
  return -(log_p.exp() * log_p).sum(-1).cpu();
}

namespace {

// Fresh weights as LlamaGen initialises them (N(0, 0.02), output head zero), except that the position
// tables and the text encoder's residual branches start at zero: a new encoder is then the identity,
// so growing a trained model by one changes nothing until training moves it.
TensorMap initial_weights(const std::vector<TensorSpec>& specs, std::uint64_t seed) {
  TensorMap weights = random_weights(specs, seed);
  for (auto& [name, t] : weights) {
    if (t.dim() == 2) t.normal_(0, 0.02);
    const bool text_branch_out = name.starts_with("text_encoder.layers.") &&
                                 (name.ends_with("attention.wo.weight") || name.ends_with("feed_forward.w2.weight"));
    if (text_branch_out || name == "pos_embeddings.weight" || name == "text_encoder.position_embeddings.weight" ||
        name == "output.weight")
      t.zero_();
  }
  return weights;
}

// A square grid's per-cell table [side², dim] resampled to `cells` rows (another square grid): area
// averaging down, nearest neighbour up. So a model initialised at another grid (MuLo-SD's low-resolution
// drafter from the target) starts with the position of each cell it shares in the image.
at::Tensor resample_cell_table(const at::Tensor& table, std::int64_t cells) {
  const auto from = static_cast<std::int64_t>(std::lround(std::sqrt(static_cast<double>(table.size(0)))));
  const auto to = static_cast<std::int64_t>(std::lround(std::sqrt(static_cast<double>(cells))));
  if (from * from != table.size(0) || to * to != cells) return table;  // not square grids: the shape check reports it
  const at::Tensor image = table.t().reshape({1, table.size(1), from, from});
  const at::Tensor resized = to < from ? at::adaptive_avg_pool2d(image, {to, to}) : at::upsample_nearest2d(image, {to, to});
  return resized.reshape({table.size(1), cells}).t().contiguous();
}

// The weights a run started with --init-from RUN copies: RUN's checkpoint (its EMA weights if present), or the target
// of a bundle (no checkpoint, a manifest naming its target's weights).
SafetensorsFile init_source(const std::string& run_dir) {
  std::string file = checkpoint_dir(run_dir) + "/ema.safetensors";
  if (!std::filesystem::exists(file)) file = checkpoint_dir(run_dir) + "/weights.safetensors";
  if (!std::filesystem::exists(file) && !std::filesystem::exists(checkpoint_dir(run_dir)) &&
      std::filesystem::exists(run_dir + "/" + kManifestName))
    file = read_manifest(run_dir).target_path();
  if (!std::filesystem::exists(file)) throw Error("--init-from '" + run_dir + "' has no checkpoint (" + file + ")");
  return SafetensorsFile::open(file);
}

// The names of the tensors of `weights` that the init_from source lacks: the ones grown onto it.
std::set<std::string> grown_tensors(const TensorMap& weights, const SafetensorsFile& source) {
  std::set<std::string> grown;
  for (const auto& [name, t] : weights)
    if (!source.find(name)) grown.insert(name);
  return grown;
}

// Overwrites the tensors of `weights` that `source` also has. A cell-position table of another grid is resampled to
// this one. Blocks the source lacks (a deeper model grown from a shallower one) get zero output projections, so each
// starts as the identity on the residual stream and the grown model as the source's function.
void copy_from_source(TensorMap& weights, const SafetensorsFile& source) {
  std::vector<TensorSpec> shared;
  for (const auto& [name, t] : weights)
    if (source.find(name)) shared.push_back({name, t.sizes().vec()});
  for (auto& [name, t] : load_tensors(source, shared, at::kCPU)) {
    if (name == "pos_embeddings.weight" && t.sizes() != weights[name].sizes()) t = resample_cell_table(t, weights[name].size(0));
    if (t.sizes() != weights[name].sizes())
      throw Error("--init-from '" + source.path() + "': tensor '" + name + "' has shape " + shape_to_string(t.sizes().vec()) +
                  ", this model's is " + shape_to_string(weights[name].sizes().vec()));
    weights[name].copy_(t);
  }
  for (auto& [name, t] : weights)
    if (name.starts_with("layers.") && !source.find(name) &&
        (name.ends_with(".attention.wo.weight") || name.ends_with(".feed_forward.w2.weight")))
      t.zero_();
}

double held_out_loss(const Transformer& model, const TokenizedCorpus& held_out) {
  c10::InferenceMode inference;
  double total = 0;
  int batches = 0;
  for (std::int64_t i = 0; i < held_out.size(); i += 32, ++batches) {
    std::vector<std::int64_t> rows;
    for (std::int64_t j = i; j < std::min<std::int64_t>(i + 32, held_out.size()); ++j) rows.push_back(j);
    total += target_loss(model, held_out, rows, std::vector<bool>(rows.size(), false)).item<double>();
  }
  return batches ? total / batches : 0;
}

}  // namespace

TensorMap train_target(const GptConfig& config, const TargetTrainParams& params, const std::string& run_dir,
                       const TokenizedCorpus& corpus, const TokenizedCorpus& held_out, const ProgressLine& progress,
                       const std::atomic<bool>* stop, const TokenizedCorpus& judged) {
  check_corpus(corpus, config);
  const std::string ckpt = checkpoint_dir(run_dir);
  const auto specs = gpt_tensor_specs(config);
  const at::Device device = resolve_device(params.device);
  CheckpointState state;
  TensorMap weights = start_or_resume(run_dir, specs, "target", [&] { return initial_weights(specs, params.seed); }, progress, state);
  const bool resume = state.step > 0;
  const auto text = [](double x) { return (std::ostringstream() << x).str(); };
  if (params.grown_lr_scale != 1 && params.init_from.empty())
    throw Error("grown_lr_scale " + text(params.grown_lr_scale) + " needs a run to grow from (--init-from)");
  const double trained_scale = state.values.count("grown_lr_scale") ? state.values["grown_lr_scale"] : 1;
  if (resume && trained_scale != params.grown_lr_scale)
    throw Error("run '" + run_dir + "' trains its grown tensors at " + text(trained_scale) +
                " x the learning rate; resume it with --grown-lr-scale " + text(trained_scale));
  std::set<std::string> grown;  // the tensors that train at grown_lr_scale x the rate
  if (!params.init_from.empty() && (!resume || params.grown_lr_scale != 1)) {
    const SafetensorsFile source = init_source(params.init_from);
    const std::set<std::string> lacking = grown_tensors(weights, source);
    if (!resume) {
      copy_from_source(weights, source);
      progress("initialised " + std::to_string(weights.size() - lacking.size()) + " of " + std::to_string(weights.size()) +
               " tensors from " + params.init_from + "; the other " + std::to_string(lacking.size()) + " start as the identity");
    }
    if (params.grown_lr_scale != 1) grown = lacking;
  }
  // The parameters are the device tensors themselves, so the model (whose weights are already there) and
  // the optimizer update one copy. The grown ones, if they have a rate of their own, are a second group.
  std::vector<at::Tensor> parameters, learned, grown_parameters;
  for (auto& [name, t] : weights) {
    parameters.push_back(t = t.to(device).requires_grad_(true));
    (grown.count(name) ? grown_parameters : learned).push_back(t);
  }
  std::vector<torch::optim::OptimizerParamGroup> groups{torch::optim::OptimizerParamGroup(learned)};
  if (!grown_parameters.empty()) groups.emplace_back(grown_parameters);
  TensorMap ema;
  if (resume && std::filesystem::exists(ckpt + "/ema.safetensors"))
    ema = load_tensors(SafetensorsFile::open(ckpt + "/ema.safetensors"), specs, device);
  else
    for (const auto& [name, t] : weights) ema[name] = t.detach().clone();
  const Transformer model(config, weights, device);

  torch::optim::AdamW optimizer(groups, torch::optim::AdamWOptions(params.schedule.peak_lr)
                                                .betas({0.9, 0.95})
                                                .weight_decay(params.weight_decay));
  if (resume) load_optimizer_state(optimizer, run_dir, device);

  // The caption reader resumes from its weights; its optimizer's moments start afresh (a few steps to rebuild).
  const bool reading = params.caption_reading > 0;
  if (reading && !corpus.object_share.defined())
    throw Error("--caption-reading needs a corpus tokenised with object shares (train tokenize writes them)");
  CaptionReader reader;
  if (reading) {
    const std::string file = ckpt + "/" + CaptionReader::kFile;
    const std::int64_t vocabulary = static_cast<std::int64_t>(corpus.vocabulary.size());
    if (resume && std::filesystem::exists(file)) {
      TensorMap saved = load_tensors(SafetensorsFile::open(file), {{"weight", {vocabulary, config.dim}}, {"bias", {vocabulary}}}, at::kCPU);
      reader = {saved.at("weight"), saved.at("bias")};
    } else {
      reader = CaptionReader::fresh(corpus, config.dim, params.seed);
    }
    reader.weight = reader.weight.to(device).requires_grad_(true);
    reader.bias = reader.bias.to(device).requires_grad_(true);
  }
  std::optional<torch::optim::AdamW> reader_optimizer;
  if (reading)
    reader_optimizer.emplace(std::vector<at::Tensor>{reader.weight, reader.bias},
                             torch::optim::AdamWOptions(params.schedule.peak_lr).betas({0.9, 0.95}));

  const bool contrasting = params.caption_contrast > 0;
  const FoilTable foil_table = FoilTable::of(corpus.vocabulary, params.foil_groups);
  const FoilTable exchange_table = FoilTable::of(corpus.vocabulary, params.exchange_groups);
  if (params.contrast_exchange < 0 || params.contrast_copy < 0 || params.contrast_exchange + params.contrast_copy > 1)
    throw Error("contrast_exchange " + std::to_string(params.contrast_exchange) + " + contrast_copy " +
                std::to_string(params.contrast_copy) + ": each a share of the foils, together at most 1");
  if (contrasting && foil_table.group_ids.empty())
    throw Error("--caption-contrast needs a caption vocabulary with words to swap (a shape, a count, a side, a size)");
  if (!contrasting && params.contrast_exchange + params.contrast_copy > 0)  // both are shares of its foils
    throw Error("contrast_exchange " + std::to_string(params.contrast_exchange) + " / contrast_copy " +
                std::to_string(params.contrast_copy) + ": each needs the caption contrast (--caption-contrast > 0)");
  if (params.tops_weight > 0 && !corpus.object_share.defined())
    throw Error("--tops-weight needs a corpus tokenised with object shares (train tokenize writes them)");
  if (contrasting && params.contrast_object_tops && !corpus.object_share.defined())
    throw Error("--contrast-on object-tops needs a corpus tokenised with object shares (train tokenize writes them)");

  // The preference loss's reference: the model the run started from, rebuilt the same way on a resume.
  const bool preferring = params.preference > 0;
  PreferencePairs pairs;
  std::optional<Transformer> reference;
  if (preferring) {
    if (params.init_from.empty()) throw Error("--preference needs the model the run starts from as its reference (--init-from)");
    if (params.preference_pairs < 1) throw Error("preference_pairs " + std::to_string(params.preference_pairs) + " must be at least 1");
    check_corpus(judged, config);
    pairs = preference_pairs(judged);
    TensorMap start = initial_weights(specs, params.seed);
    copy_from_source(start, init_source(params.init_from));
    for (auto& [name, t] : start) t = t.to(device);
    reference.emplace(config, start, device);
    progress("preference: " + std::to_string(pairs.captions()) + " captions with a passing and a failing image, against " +
             params.init_from);
  }

  const int last_step = params.stop_at > 0 ? std::min(params.stop_at, params.schedule.steps) : params.schedule.steps;
  std::vector<std::string> columns = {"loss", "lr", "grad_norm", "held_out_loss"};
  if (reading) columns.push_back("caption_reading");
  if (contrasting) columns.insert(columns.end(), {"caption_contrast", "foil_margin"});
  if (preferring) columns.insert(columns.end(), {"preference", "preference_margin"});
  TrainingLog log(run_dir, columns, last_step, state);
  double last_held_out = state.values.count("held_out_loss") ? state.values["held_out_loss"] : 0;
  for (int step = state.step; step < last_step; ++step) {
    const double lr = params.schedule.lr_at(step);
    for (std::size_t g = 0; g < optimizer.param_groups().size(); ++g)
      static_cast<torch::optim::AdamWOptions&>(optimizer.param_groups()[g].options()).lr(g == 0 ? lr : lr * params.grown_lr_scale);
    const CorpusBatch batch = corpus_batch(corpus, params.batch, params.caption_dropout, params.seed, step, 2);
    const auto& [rows, dropped] = batch;
    const auto [hidden, tokens] = teacher_hidden(model, corpus, rows, dropped);
    const at::Tensor logits = model.head(hidden);
    const BatchObjects objects =
        batch_objects(corpus, rows, config, params.tops_weight > 0 || (contrasting && params.contrast_object_tops));
    const at::Tensor loss = token_loss(logits, tokens, objects, params.object_weight, params.tops_weight);
    const at::Tensor read_loss =
        reading ? caption_reading_loss(model.final_norm(hidden), config, corpus, rows, dropped, reader) : at::Tensor();
    const auto [contrast_loss, foil_margin] =
        contrasting ? caption_contrast_loss(model, logits, tokens, draw_foils(foil_table, exchange_table, params.contrast_exchange, params.contrast_copy, corpus, batch, params.seed, step),
                                            params.contrast_object_tops ? objects.tops : at::Tensor())
                    : std::pair<at::Tensor, double>{};
    const auto [preferred_loss, preference_margin] =
        preferring ? preference_loss(model, *reference, judged, pairs, params, step) : std::pair<at::Tensor, double>{};
    at::Tensor objective = loss;
    if (contrasting) objective = objective + params.caption_contrast * contrast_loss;
    if (preferring) objective = objective + params.preference * preferred_loss;
    optimizer.zero_grad();
    if (reading) {
      reader_optimizer->zero_grad();
      for (auto& group : reader_optimizer->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
      (objective + params.caption_reading * read_loss).backward();
      clip_gradients({reader.weight, reader.bias}, params.grad_clip);
      reader_optimizer->step();
    } else {
      objective.backward();
    }
    const double grad_norm = clip_gradients(parameters, params.grad_clip);
    optimizer.step();
    {
      at::NoGradGuard no_grad;
      const double decay = std::min(params.ema_decay, (1.0 + step) / (10.0 + step));
      for (const auto& [name, t] : model.weights()) ema[name].mul_(decay).add_(t.detach(), 1 - decay);
    }

    const bool checkpoint = (step + 1) % params.checkpoint_every == 0 || step + 1 == last_step ||
                            (stop && stop->load());
    if (checkpoint && held_out.size() > 0) last_held_out = held_out_loss(model, held_out);
    if ((step + 1) % params.log_every == 0 || checkpoint) {
      std::vector<double> values = {loss.item<double>(), lr, grad_norm, last_held_out};
      if (reading) values.push_back(read_loss.item<double>());
      if (contrasting) values.insert(values.end(), {contrast_loss.item<double>(), foil_margin});
      if (preferring) values.insert(values.end(), {preferred_loss.item<double>(), preference_margin});
      log.row(step + 1, values);
      progress(log.progress(step, values));
    }
    if (checkpoint) {
      save_tensors(ckpt + "/ema.safetensors", ema);
      if (reading) save_tensors(ckpt + "/" + CaptionReader::kFile, {{"weight", reader.weight.detach().cpu()}, {"bias", reader.bias.detach().cpu()}});
      std::map<std::string, double> values = {{"held_out_loss", last_held_out}};
      if (params.grown_lr_scale != 1) values["grown_lr_scale"] = params.grown_lr_scale;
      save_checkpoint(run_dir, model.weights(), optimizer, log, step + 1, values, state);
    }
    if (stop && stop->load()) break;
  }
  return ema;
}

}  // namespace speculum
