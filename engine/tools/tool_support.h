// What the tools of speculum_tools.h (engine/tools/, data/image_tools.cpp, eval/evaluation_tools.cpp) share inside the
// engine: their progress lines, the stop flag, a VQ run's tokenizer, the weights a run folder ends with, and a
// bundle's frozen target for the parts trained beside it.
#pragma once

#include <memory>
#include <string>

#include "models/transformer.h"
#include "speculum_tools.h"
#include "train/target_trainer.h"
#include "train/training_run.h"

namespace speculum::tools {

// The callbacks' progress line (a no-op when none was given), as the trainers take it.
ProgressLine progress_of(const ToolCallbacks& callbacks);
void report(const ToolCallbacks& callbacks, const std::string& line);
bool stopped(const ToolCallbacks& callbacks);

// A VQ run folder's tokenizer.json (the hint says how to make one).
VqConfig read_vq_run(const std::string& vq_dir);

// The weights a run folder's latest checkpoint holds: its EMA when it has one, else the raw weights.
std::string final_run_weights(const std::string& run_dir);

// A T5 bundle's corpus: each caption encoded with the bundle's T5 folder, once per distinct caption (equal captions
// share the features), into corpus.caption_features / caption_slots; nothing for other bundles. Reports how many.
void encode_corpus_captions(TokenizedCorpus& corpus, const BundleManifest& m, const ToolCallbacks& callbacks);

// A bundle's manifest, its target frozen on the run's device, the training corpora (their words numbered as the
// bundle numbers them, else an error naming the first difference; a T5 bundle's captions encoded) and the held-out
// corpus (empty when none). Sets the LibTorch threads.
struct FrozenTarget {
  BundleManifest manifest;
  std::unique_ptr<Transformer> target;
  TokenizedCorpus corpus, held_out;
};
FrozenTarget load_frozen_target(const FrozenTargetRun& run, const ToolCallbacks& callbacks);

}  // namespace speculum::tools
