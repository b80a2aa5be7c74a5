// Trains the text-conditioned LlamaGen target on a tokenised corpus: next-token cross-entropy with
// teacher forcing, caption dropout (the null caption) for classifier-free guidance, AdamW with a
// cosine schedule and gradient clipping. Resumes from `<run_dir>/checkpoint`.
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "models/tensor_io.h"
#include "models/transformer.h"
#include "train/training_run.h"

namespace speculum {

// Images as VQ codes with their condition: captions as text-vocabulary ids, or (a class-conditioned model's samples)
// class ids; stored as safetensors ("codes" I32 [N, tokens], "words" I32 [N, max_words] padded with -1, metadata
// "vocabulary", optionally "classes" I32 [N], optionally "object_share" U8 [N, tokens]: 255 x the share of each
// token's cell the scene's objects cover, and optionally "passed" U8 [N]: the prompt checker's verdict on each image).
struct TokenizedCorpus {
  at::Tensor codes;  // [N, tokens] int64
  at::Tensor object_share;  // [N, tokens] float 0..1, or undefined (a corpus tokenised before it existed); emoji rows 0
  std::vector<std::vector<int>> words;  // empty captions in a class or T5 corpus
  std::vector<int> classes;              // one per image in a class corpus, else empty
  std::vector<char> passed;              // the target's own samples judged (train samples --verdicts): 1 passed, else empty
  std::vector<std::string> vocabulary;  // word of each id (stored in the file's metadata)
  // A T5 model's samples: each image's caption as generation read it (metadata "captions", a JSON array), else empty.
  std::vector<std::string> captions;
  // Their T5 features, [cls_token_num, caption_dim] with the slots that hold a token, one per image (equal captions
  // share a tensor): computed when a trainer loads the corpus (encode_corpus_captions), never stored.
  std::vector<at::Tensor> caption_features;
  std::vector<std::vector<char>> caption_slots;

  std::int64_t size() const { return codes.defined() ? codes.size(0) : 0; }
  void save(const std::string& path, int max_words) const;
  static TokenizedCorpus load(const std::string& path);
};

// Several corpora as one, in order (say, the first tokenisation and later fresh scenes). Their vocabularies
// must agree word for word where they overlap (a shapes-only corpus numbers its words as a prefix of one
// with emoji captions); the result carries the longest. Throws naming the file and the first differing word.
TokenizedCorpus load_corpora(const std::vector<std::string>& paths);

// A judged corpus's images as preference pairs: per caption that has both, the rows the checker passed and the rows
// it failed (captions with only one kind take no part). Throws if the corpus has no verdicts or no such caption.
struct PreferencePairs {
  std::vector<std::vector<std::int64_t>> passed, failed;  // per caption
  std::size_t captions() const { return passed.size(); }
};
PreferencePairs preference_pairs(const TokenizedCorpus& judged);

// Throws unless the corpus has images, each has `config`'s grid of tokens, and a class model's corpus has a class
// inside its table per image (a caption model's, none), a T5 model's a caption per image.
void check_corpus(const TokenizedCorpus& corpus, const GptConfig& config);

// Step `step`'s training batch: `batch` corpus rows and, per row, whether it trains under the null
// caption. Row i draws counter slots i·slots_per_row (row) and i·slots_per_row + 1 (dropout), so a
// trainer that needs more draws per row keeps its own.
struct CorpusBatch {
  std::vector<std::int64_t> rows;
  std::vector<bool> null_caption;
};
CorpusBatch corpus_batch(const TokenizedCorpus& corpus, int batch, double caption_dropout, std::uint64_t seed, int step,
                         int slots_per_row);

// Mean next-token cross-entropy (nats) of the images `rows` of the corpus; with object_weight or tops_weight > 0, the
// mean weighted by 1 + object_weight x each token's object share + tops_weight x whether it is an object top
// (TargetTrainParams::object_weight, tops_weight).
at::Tensor target_loss(const Transformer& model, const TokenizedCorpus& corpus, const std::vector<std::int64_t>& rows,
                       const std::vector<bool>& null_caption, double object_weight = 0, double tops_weight = 0);

// Which vocabulary ids can be swapped for which (TargetTrainParams::foil_groups, exchange_groups), by id.
struct FoilTable {
  std::vector<int> group_of;                // per vocabulary id: its group, or -1
  std::vector<std::vector<int>> group_ids;  // per group: the ids of its words in this vocabulary (groups of 2 or more)
  static FoilTable of(const std::vector<std::string>& vocabulary, const std::vector<std::vector<std::string>>& groups);
};

// The caption contrast's foils for the batch rows trained under their caption. A caption with two different words
// of one exchange group (two colours, two shapes) gets, with probability exchange_share, those two words exchanged
// (a binding foil: the same words, bound to the other object), with probability copy_share one of them copied onto
// the other (a leak foil: both objects alike); else one of its replaceable words (drawn uniformly) becomes another
// word of its group (drawn uniformly). Draws come from the Data stream's slots past the batch's.
struct Foils {
  std::vector<std::int64_t> batch_rows;  // which rows of the batch have a foil
  std::vector<std::vector<int>> words;   // their foil captions
};
Foils draw_foils(const FoilTable& replace, const FoilTable& exchange, double exchange_share, double copy_share,
                 const TokenizedCorpus& corpus, const CorpusBatch& batch, std::uint64_t seed, int step);

// The object tops of images [B, N] by their object shares [B, N] on a rows × cols grid
// (TargetTrainParams::contrast_object_tops): 1 for a cell an object covers (a twentieth or more) whose cell above it
// has none, and for the cell below such a cell; else 0.
at::Tensor object_tops(const at::Tensor& shares, std::int64_t rows, std::int64_t cols);

// Entropy (nats) of the target's conditional next-token distribution at every image position of the
// corpus images `rows`, teacher-forced on their true tokens: [rows, tokens] on the CPU.
at::Tensor next_token_entropy(const Transformer& model, const TokenizedCorpus& corpus,
                              const std::vector<std::int64_t>& rows);

// Teacher-forced features of the corpus images `rows` (no gradient): the target's last-block output before
// the final norm [B, N, dim], column i the feature whose head gives the distribution of token i; `tokens`
// receives the images' tokens [B, N] on the target's device. The drafters' and SSD heads' training data.
at::Tensor teacher_features(const Transformer& target, const TokenizedCorpus& corpus, const std::vector<std::int64_t>& rows,
                            const std::vector<bool>& null_caption, at::Tensor& tokens);

// Runs `body` on the teacher-forced features and tokens of the corpus's first `images` images (conditional
// stream), 16 at a time: how the drafters' and SSD heads' fits are measured.
void for_each_teacher_batch(const Transformer& target, const TokenizedCorpus& corpus, int images,
                            const std::function<void(const at::Tensor& features, const at::Tensor& tokens)>& body);

// Returns the EMA weights (also checkpointed as ema.safetensors next to the raw weights). `judged`: the target's own
// samples with the checker's verdicts, for the preference loss (TargetTrainParams::preference); empty without it.
TensorMap train_target(const GptConfig& config, const TargetTrainParams& params, const std::string& run_dir,
                       const TokenizedCorpus& corpus, const TokenizedCorpus& held_out, const ProgressLine& progress,
                       const std::atomic<bool>* stop = nullptr, const TokenizedCorpus& judged = {});

}  // namespace speculum
