// Speculum tools: the second public header, for training, data preparation, calibration and evaluation.
//
// speculum.h loads a bundle and generates; this header makes and measures the parts a bundle holds — the VQ
// tokenizer, the target, EAGLE/LISA drafters, SSD's heads, MuLo-SD's low-resolution drafter, LISA's
// calibration — and scores what comes out (the shapes prompt checker, the Fréchet distance's features). Every
// tool takes a request struct with defaults (`to_string()` says what will run) and ToolCallbacks. No LibTorch
// or OpenCV types appear here; the value types it re-exports (bundle manifests, traces, bench records, the
// shapes grammar, a trace's replay as grid states, checked file reading and atomic writing) are LibTorch-free, so
// traces and bench records stay readable without it.
//
// Thread-safety rules
//  - Tools are free functions: each call is independent and may run on any thread. Calls that write the same
//    run folder or bundle must not overlap (the last writer of a manifest wins).
//  - A request's `threads` sets LibTorch's intra-op thread count on the calling thread for the call's duration
//    and leaves it so (as EngineParams::threads does for generate()).
//  - ToolCallbacks::progress runs synchronously on the calling thread, one line at a time, in order.
//  - ToolCallbacks::stop is polled between steps: a trainer writes a checkpoint and returns (a later call with the
//    same request resumes), a sampler keeps what it made so far. Nothing is installed in a bundle after a stop.
//  - Errors are thrown as speculum::Error naming the file, tensor, field or value at fault.
//  - The functions marked "full builds" render or read images (OpenCV); SPECULUM_ENGINE_ONLY builds lack them.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/shapes_scene.h"
#include "eval/check_report.h"
#include "io/atomic_file.h"
#include "io/bundle.h"
#include "io/input_file.h"
#include "io/limits.h"
#include "speculum.h"
#include "trace/bench_records.h"
#include "trace/frechet_distance.h"
#include "trace/grid_state.h"
#include "trace/timeline.h"
#include "trace/trace_io.h"
#include "train/train_params.h"

namespace speculum {

struct ToolCallbacks {
  std::function<void(const std::string&)> progress;  // progress and report lines
  const std::atomic<bool>* stop = nullptr;             // see the thread rules above
};

// ---- The target and the parts beside it (every build; --device cuda with a CUDA LibTorch) ----

// The project's own text-conditioned target, a small LlamaGen GPT reading captions through a word-level encoder.
struct TargetShape {
  int dim = 192;
  int layers = 6;
  int heads = 4;                // head size divisible by 4 (2D RoPE)
  int text_encoder_layers = 2;  // contextual blocks over the caption's words (0: bare word embeddings)
  bool image_positions = true;  // a learned position embedding per grid cell on top of 2D RoPE
};

struct TargetTrainRequest {
  std::string vq_run;                // VQ run folder (train_vq): its tokenizer.json
  std::vector<std::string> corpora;  // tokenised corpora (tokenize_scenes), used as one
  std::string held_out;              // optional: a corpus for the validation loss
  // The target's own samples with the checker's verdicts (generate_samples with judge set), for params.preference.
  std::vector<std::string> judged;
  std::string out;                   // run folder; resumes when it has a checkpoint (keeping its architecture)
  int threads = 2;
  TargetShape shape;                 // a new run only
  TargetTrainParams params;
  std::string to_string() const;
};
void train_target_run(const TargetTrainRequest& request, const ToolCallbacks& callbacks = {});

// A part trained beside a bundle's frozen target, teacher-forced on corpora whose words the bundle numbers alike
// (the shapes corpora, or the target's own samples from generate_samples).
struct FrozenTargetRun {
  std::string bundle;
  std::vector<std::string> corpora;
  std::string held_out;  // optional: acceptance at checkpoints
  std::string out;       // run folder; resumes when it has a checkpoint
  std::string device = "cpu";
  int threads = 2;
  std::string to_string() const;
};

struct DrafterTrainRequest {
  FrozenTargetRun run;
  DrafterTrainParams params;
  bool install = false;  // at the end, store it in the bundle (F16) under the objective's name
  std::string to_string() const;
};
void train_drafter_run(const DrafterTrainRequest& request, const ToolCallbacks& callbacks = {});

struct SpatialHeadsTrainRequest {
  FrozenTargetRun run;
  SpatialHeadsTrainParams params;  // horizontal 1..kMaxHorizontalHeads, vertical 1..kMaxVerticalHeads
  bool install = false;            // at the end, store them as the bundle's SSD heads (F16)
  std::string to_string() const;
};
void train_spatial_heads_run(const SpatialHeadsTrainRequest& request, const ToolCallbacks& callbacks = {});

// MuLo-SD's low-resolution drafter from the target's own samples: they are decoded, average-pooled by `factor` and
// encoded again with the bundle's tokenizer (once per run folder), and a target at the smaller grid, initialised from
// the bundle's, trains on them.
struct LowResTrainRequest {
  FrozenTargetRun run;  // corpora and held_out: samples at the bundle's own grid
  int factor = 2;       // 2 or 4 (kLowResFactors)
  TargetTrainParams params = [] {
    TargetTrainParams p;
    p.schedule = {2000, 50, 3e-4, 0.1};
    return p;
  }();
  bool install = false;  // at the end, store it as the bundle's low-resolution drafter (F16)
  std::string to_string() const;
};
void train_low_res_run(const LowResTrainRequest& request, const ToolCallbacks& callbacks = {});

// Stores a target run trained at a grid 2 or 4 times smaller than the bundle's (its EMA weights when present) as the
// bundle's low-resolution drafter; throws unless it is the bundle's architecture and conditioning at that grid.
void install_low_res_drafter(const std::string& run_dir, const std::string& bundle_dir, const ToolCallbacks& callbacks = {});

// The target's own images (ar at the bundle's recommended sampling) as a corpus: self-distillation data.
struct SamplesRequest {
  std::string bundle;
  std::string out;              // corpus file (.safetensors)
  int count = 256;
  std::uint64_t scene_seed = 960000000;  // image i: generation seed scene_seed + i, its caption or class from it
  std::vector<int> classes;     // class bundles: drawn uniformly from these ids (empty: every class)
  // Text bundles: captions from this file (Engine::read_prompts), image i taking prompt (scene_seed + i) mod their count;
  // a T5 bundle needs one, a shapes bundle without one draws shapes captions from the seed.
  std::string prompts_file;
  std::string device = "cpu";
  int threads = 2;
  // Images drawn per caption (each with its own generation seed): image i takes the caption of scene seed
  // scene_seed + i / per_caption and generation seed scene_seed + i, so one caption's images can be compared.
  int per_caption = 1;
  // A verdict on each image (front ends: the prompt checker's): stored in the corpus ('passed'), for preference
  // training on the target's own samples; with only_passing, the corpus keeps only the passes instead. Empty: none.
  std::function<bool(const GenerateParams& request, const GenerateResult& result)> judge;
  bool only_passing = false;
  std::string to_string() const;
};
void generate_samples(const SamplesRequest& request, const ToolCallbacks& callbacks = {});

// The class a class bundle's sample with seed `seed` is drawn under: uniform over `classes`, from the seed alone (so
// samples and calibration repeat exactly).
int class_of_sample(std::uint64_t seed, const std::vector<int>& classes);

// How well a bundle's drafter fits its target, teacher-forced on a corpus's first images (conditional stream).
struct DrafterFitRequest {
  std::string bundle;
  std::string drafter = "eagle";  // "eagle" or "lisa"
  std::string corpus;
  int images = 256;
  std::string to_string() const;
};
struct DrafterFitReport {
  double acceptance = 0;  // mean Σ_v min(p, q)
  double top1 = 0;        // share of positions where the drafter's top-1 is the target's
};
DrafterFitReport measure_drafter_fit(const DrafterFitRequest& request);

// A bundle from a VQ run and a target run's latest checkpoint (EMA weights when present).
struct BundleRequest {
  std::string vq_run, target_run, out;
  bool fp16 = true;        // store F16 and run the matrices in f16 (else F32)
  SamplingParams sampling;  // the recommendation the CLI and the studio start from
  std::string to_string() const;
};
void assemble_bundle(const BundleRequest& request, const ToolCallbacks& callbacks = {});

// LISA's soft-verification bounds, measured on the target's own images and written into the bundle's manifest.
struct CalibrateRequest {
  std::string bundle;
  int images = 48;
  std::uint64_t scene_seed = 950000000;  // captions (class bundles: classes) of the images from this seed on
  std::string prompts_file;              // text bundles: captions from this file, as SamplesRequest takes them
  SoftCalibrationParams params;
  int threads = 2;
  bool dry_run = false;  // measure only
  std::string to_string() const;
};
SoftVerificationBounds calibrate_bundle(const CalibrateRequest& request);

// Writes what a bundle recommends for `method` (manifest "method_options"; ModelInfo::method_options), replacing what it
// recommended for it before; empty `options` drop the recommendation. Checked as a request's options are (the method,
// the names, the ranges), and no draft size. Returns every method's recommendations after the change.
std::map<std::string, MethodOptions> recommend_method_options(const std::string& bundle_dir, const std::string& method,
                                                              const MethodOptions& options);

// What a decode step's matrix products cost on this machine, by implementation and weight format, printed as tables
// (bench --kernels). `threads` 0: the current setting.
void print_kernel_study(std::ostream& out, int threads);

// ---- Data, the tokenizer and evaluation (full builds) ----

// The project's VQ tokenizer on shapes scenes (64x64 -> 16x16 codes), optionally half emoji.
struct VqTrainRequest {
  std::string out;  // run folder; resumes when it has a checkpoint; ends with vq.safetensors and tokenizer.json
  VqConfig config = [] {
    VqConfig c;
    c.codebook_size = 1024;
    c.codebook_dim = 8;
    c.ch = 48;
    c.ch_mult = {1, 1, 2};
    c.z_channels = 64;
    c.num_res_blocks = 1;
    c.norm_groups = 16;
    return c;
  }();
  VqTrainParams params;
  int batch = 32;
  int crop = 32;        // random crops of this side (a multiple of the downsampling factor, <= 64)
  int held_out = 256;   // held-out shapes images for PSNR
  std::string emoji;    // optional emoji folder: half of each batch, every 16th held out
  int threads = 2;
  std::string to_string() const;
};
void train_vq_run(const VqTrainRequest& request, const ToolCallbacks& callbacks = {});

// Renders shapes scenes (and optionally emoji) and encodes them with a trained tokenizer into a corpus.
struct TokenizeRequest {
  std::string vq_run;
  std::string out;  // corpus file (.safetensors)
  int count = 20000;
  std::uint64_t seed = 0;                // first scene seed
  std::vector<std::string> backgrounds;  // keep only scenes on these modes (flat, gradient, noisy, striped); empty: all
  std::vector<std::string> families;     // keep only scenes of these families (single, count, relation); empty: all
  int downscale = 1;                     // average-pool by 1, 2 or 4 before encoding
  std::string emoji;                     // optional emoji folder: all but every 16th ...
  bool emoji_held_out = false;           // ... or only every 16th
  std::string to_string() const;
};
void tokenize_scenes(const TokenizeRequest& request, const ToolCallbacks& callbacks = {});

// The shapes feature network behind bench's Fréchet distance.
struct FeatureNetTrainRequest {
  std::string out;
  FeatureNetTrainParams params;
  int batch = 64;
  int held_out = 512;
  int threads = 2;
  std::string to_string() const;
};
void train_feature_net_run(const FeatureNetTrainRequest& request, const ToolCallbacks& callbacks = {});

// A seeded shapes dataset: PNG files and captions.jsonl.
struct ShapesDatasetRequest {
  std::string out;
  int count = 1000;
  std::uint64_t seed = 0;  // scene i uses seed + i
  std::string to_string() const;
};
void write_shapes_dataset(const ShapesDatasetRequest& request, const ToolCallbacks& callbacks = {});

// The prompt checker on an RGB image (any size, scored at 64x64 scale) and on image files.
eval::CheckReport check_image(const Image& image, const eval::ParsedPrompt& prompt);
// Whether the checker passes `image` for `prompt`; nullopt when the prompt is not a shapes caption (an emoji's name).
std::optional<bool> shapes_checker_verdict(const std::string& prompt, const Image& image);
Image read_image_file(const std::string& path);  // PNG and the formats OpenCV reads; throws naming the file

// The checker on rendered ground-truth scenes, each reconstructed by a bundle's tokenizer when one is named.
struct GroundTruthCheckRequest {
  int count = 1000;
  std::uint64_t first_seed = 1000000;
  std::string through_tokenizer;  // a bundle folder, or empty
  std::string to_string() const;
};
struct PassCount {
  int passed = 0, total = 0;
};
struct GroundTruthCheckReport {
  std::vector<std::pair<std::string, PassCount>> by_family;  // in name order, "all" among them
  std::vector<std::pair<std::string, PassCount>> by_claim;   // in name order
  std::vector<std::string> misses;                       // the first 20 failed claims, with their seeds
};
GroundTruthCheckReport check_ground_truth(const GroundTruthCheckRequest& request);

// Mean next-token entropy of a bundle's target on flat and on textured cells of held-out shapes images.
struct EntropyRequest {
  std::string bundle;
  std::string held_out;                  // a corpus from tokenize_scenes, shapes rows first
  int count = 256;
  std::uint64_t scene_seed = 800000000;  // the scene seed of the corpus's first row
  double flat_below = 2.0;               // a cell is flat when its patch's pixel std (0-255) is below this ...
  double textured_above = 12.0;          // ... and textured when above this
  int threads = 2;
  std::string to_string() const;
};
struct EntropyReport {
  struct Mean {
    double value = 0;
    long cells = 0;
  };
  Mean flat, textured, middle, all;
  double uniform = 0;  // the entropy of a uniform distribution over the codebook
};
EntropyReport measure_entropy(const EntropyRequest& request);

// The shapes feature network's features (the Fréchet distance's inputs), values rounded to 1e-4 as bench stores them.
class FeatureExtractor {
 public:
  static constexpr int kImageSize = 64;  // the side of the images it takes
  static std::optional<FeatureExtractor> load(const std::string& path);  // nothing when there is no file there
  ~FeatureExtractor();
  FeatureExtractor(FeatureExtractor&&) noexcept;
  FeatureExtractor& operator=(FeatureExtractor&&) noexcept;

  std::vector<float> of(const Image& image) const;  // empty unless the image is 64x64
  // Scenes first_seed .. first_seed + count - 1: their renders reconstructed by the tokenizer of the bundle at
  // `bundle_dir`, or the renders themselves when it is empty.
  std::vector<std::vector<float>> of_scenes(std::uint64_t first_seed, int count, const std::string& bundle_dir) const;

 private:
  struct Impl;
  explicit FeatureExtractor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace speculum
