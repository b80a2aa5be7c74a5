// Speculum engine: the one public header for the studio, the CLI and any other front end.
//
// Load a model bundle, run a generation request with a decoding method, and receive events, previews,
// progress and log lines through callbacks; cancel from any thread. No LibTorch types appear here.
//
// Thread-safety rules
//  - An Engine is immutable after load(). info(), decode(), preview(), check_prompt() and read_prompts() may be called
//    from any thread at any time, also while a generation runs.
//  - generate() may be called from any thread; calls on one Engine are serialised (a second call waits
//    for the first). Run it on a worker thread: it blocks for the whole generation.
//  - Every callback runs synchronously on the thread that called generate(), in event order. Callbacks
//    must not call generate() on the same Engine. Keep them cheap or hand the data to another thread.
//  - `cancel` is polled between steps (each step is at most one target forward), so a run stops within
//    one step of the flag being set; the result then holds the partial grid and cancelled = true.
//  - EngineParams::threads is the intra-op thread count of generate(), on whichever thread calls it.
//    decode() and the previews run on one thread: they are for display, beside a running generation.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "decoding/draft_sizes.h"
#include "decoding/method_info.h"
#include "error.h"
#include "sampling/sampling_params.h"
#include "trace/events.h"
#include "trace/metrics.h"

namespace speculum {

enum class LogLevel { Debug, Info, Warn, Error };
using LogCallback = std::function<void(LogLevel, const std::string&)>;

struct EngineParams {
  std::string bundle_dir;        // a folder with speculum.json
  std::string device = "auto";   // "auto" (CUDA when available), "cpu" or "cuda"
  int threads = 0;               // LibTorch intra-op threads; 0 leaves the current setting
  std::string t5_folder;         // T5 bundles: the T5 folder to use instead of the one the manifest names
  std::string weights;           // "f32", "f16", "bf16" or "q8": how the matrices run; empty: the manifest's (else f32)
  // Where `auto` draft sizes come from (draft_sizes.h; tune_draft_sizes() measures them, save_draft_sizes() writes the
  // file). Empty, missing, or without a table for this bundle, weights, device and threads: each auto size runs its
  // parameter's default. The CLI and the studio use ~/.cache/speculum/draft-sizes.json.
  std::string draft_sizes_file;
  std::string to_string() const;
};

struct GenerateParams {
  std::string prompt;      // text bundles: the caption; class bundles: a class name (or use class_id)
  int class_id = -1;       // class bundles: the class; -1 means "from the prompt, else class 0"
  // Same request + seed = same tokens, on any thread count, once draft sizes are fixed: an auto size (draft_sizes.h)
  // resolves by the draft-size table of this thread count; GenerateResult::method_options holds the sizes that ran.
  std::uint64_t seed = 0;
  std::string method = "ar";
  MethodOptions method_options;
  SamplingParams sampling;
  int preview_every = 0;   // send a preview every N committed tokens (and at the end); 0 = none

  std::string to_string() const;
  std::string to_json() const;                        // everything needed to reproduce the run
  static GenerateParams from_json(const std::string& json);  // throws Error naming the bad field
};

struct Image {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  // row-major, 3 bytes per pixel
};

// A decoded partial grid: unknown cells are decoded with a neutral token and flagged in `known`.
struct Preview {
  Image image;
  std::vector<char> known;  // per grid cell, raster order
  int committed = 0;
  int total = 0;
};

struct Callbacks {
  LogCallback log;
  std::function<void(const Event&)> event;
  std::function<void(const Preview&)> preview;
  std::function<void(int committed, int total)> progress;
};

struct GenerateResult {
  std::vector<int> tokens;  // raster order, -1 where a cancelled run left cells open
  Image image;              // final image, or the preview of a partial grid
  RunMetrics metrics;
  bool cancelled = false;
  MethodOptions method_options;  // what the method ran with: the request's options, auto draft sizes made concrete
};

struct ModelInfo {
  std::string name;
  std::string bundle_dir;
  std::string device;
  bool text_conditioned = false;
  std::vector<std::string> classes;     // class bundles
  std::vector<std::string> text_vocab;  // text bundles with a vocabulary of their own
  bool free_text = false;               // T5 bundles: any text; max_prompt_words counts T5 tokens (eos included)
  std::string text_encoder;             // T5 bundles: the folder and what it holds
  int max_prompt_words = 0;
  int grid_rows = 0;
  int grid_cols = 0;
  int low_res_rows = 0;  // MuLo-SD's low-resolution drafter's grid; 0 when the bundle has none
  int low_res_cols = 0;
  int image_size = 0;
  int vocab_size = 0;
  std::int64_t target_parameters = 0;
  std::string weight_format;             // how the matrices run: "f32", "f16", "bf16" or "q8"
  std::string kernels;                   // the decode step's instruction set: "avx512", "avx2" or "portable" (SPECULUM_KERNELS)
  std::int64_t decode_step_bytes = 0;    // weight bytes one target decode step reads (the roofline's numerator)
  std::int64_t tokenizer_parameters = 0;
  std::string target_summary;  // "dim 256, 6 layers, 4 heads, ffn 768, ..."
  SamplingParams sampling;     // the bundle's recommended sampling: what the CLI and the studio start from
  // The bundle's recommended method options (manifest "method_options"), where its measurements chose other values than
  // the engine's defaults (ParamSpec::default_value, the papers' values): generate() uses them for the options a request
  // leaves out, and the studio shows them as the defaults. Draft sizes are never among them (they are per machine).
  std::map<std::string, MethodOptions> method_options;
  bool cfg_available = true;   // false for a class table without a null row: only cfg 1 runs
  std::vector<std::string> methods;  // the methods this bundle can run (those needing a drafter it lacks are left out)
  DraftSizeKey draft_size_key;                // what a draft-size table measured here is filed under
  std::optional<DraftSizeTable> draft_sizes;  // the table for this key in EngineParams::draft_sizes_file, if tuned
  // Text bundles with a prompt guide: how prompts read, prompts the model draws well (each one check_prompt
  // accepts), and how they were chosen. Empty otherwise.
  std::string prompt_grammar;
  std::vector<std::string> example_prompts;
  std::string examples_chosen_by;
};

// The roofline of a 1-token step: it reads step_bytes of weights, at best as fast as reading a buffer that size
// (from whichever cache level or memory holds it between steps, as it holds the step's own weights).
struct StepRoofline {
  std::int64_t step_bytes = 0;              // info().decode_step_bytes, at least 1 MiB
  double step_ms = 0;                       // median of the 1-token steps
  double read_ms = 0;                       // median of the reads of a step_bytes buffer: the roofline
  double step_over_read = 0;                // median of the per-pair ratios: how far the step is from the roofline
  double memory_gbs = 0;                    // reading memory_probe_bytes, beyond the last-level cache: main memory's rate
  std::int64_t memory_probe_bytes = 0;
  std::int64_t last_level_cache_bytes = 0;  // as the system reports it; 0 if unknown
};

class Engine {
 public:
  // Throws Error naming the first problem with the bundle (manifest field, tensor name, shape, dtype).
  static std::unique_ptr<Engine> load(const EngineParams& params, const LogCallback& log = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const ModelInfo& info() const;
  // Throws Error when the request is invalid (unknown word, class, method, parameter, range).
  GenerateResult generate(const GenerateParams& params, const Callbacks& callbacks = {},
                          const std::atomic<bool>* cancel = nullptr);
  // Empty when the prompt is usable; otherwise the reason (unknown words with suggestions, ...).
  std::string check_prompt(const std::string& prompt) const;
  // The prompts of a file, one per line ('#' comments and blank lines skipped), each one check_prompt accepts; else an
  // Error naming the file and the line at fault (or the file's size, count or emptiness).
  std::vector<std::string> read_prompts(const std::string& path) const;
  // Empty when the model reads the whole prompt; otherwise what it leaves out (T5 bundles: the tokens past
  // max_prompt_words, after LlamaGen's cleaning). generate() logs it as a warning too.
  std::string prompt_warning(const std::string& prompt) const;
  Image decode(const std::vector<int>& tokens) const;     // a full grid, raster order
  // What one target forward of n new tokens costs on this device, after the prefix and `context` image tokens,
  // with the bundle's CFG rows: the bound on what any method that verifies n tokens per pass can gain.
  // (ms: the median of `repeats`)
  std::vector<ForwardCost> measure_forward_cost(const std::vector<int>& new_tokens, int context, int repeats) const;
  // T5 bundles: what encoding one prompt costs (cleaning, tokenising, the encoder; median of `repeats`, in ms, on the
  // calling thread's threads). A generation pays it once per prompt: the features are reused.
  double measure_caption_cost(const std::string& prompt, int repeats) const;
  // A 1-token decode step (after half the grid) against reading its weight bytes once, the two alternating `pairs`
  // times so that the machine's drift within and between runs cancels out of their ratio; and main memory's rate.
  StepRoofline measure_step_roofline(int pairs) const;
  Preview preview(const std::vector<int>& tokens) const;  // -1 marks unknown cells
  // What each code looks like on its own: the centre cell of a 3x3 grid of that code, decoded (one patch of
  // image_size / grid_cols pixels a side per token). Throws Error for a token outside the codebook.
  std::vector<Image> token_patches(const std::vector<int>& tokens) const;
  // The same for the low-resolution drafter's grid (info().low_res_rows x low_res_cols tokens): its picture
  // at 1/r of the size. Throws Error when the bundle has no low-resolution drafter or the count differs.
  Preview preview_low_res(const std::vector<int>& tokens) const;

 private:
  struct Impl;
  class ForwardTimer;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

const std::vector<MethodInfo>& available_methods();

// What generate() checks of a request before any bundle is involved: a prompt without control characters, sampling
// ranges, a known method, its options' names and ranges. Throws Error naming the field. For requests read back from
// files (a PNG's, a trace's).
void check_request(const GenerateParams& params);

// Measures each method's draft size on this engine (bundle, weights, device, threads): every candidate size
// (draft_size_candidates) and `ar` run the same images, interleaved image by image so that drift in the machine's
// speed falls on all alike; a size's cost is its median ms per image, the chosen size the cheapest. The cost curve
// (1..32 new tokens) is recorded beside it: what the sizes trade against their acceptance.
struct TuneParams {
  std::vector<std::string> methods;  // empty: every method of info().methods with a draft size
  int images = 4;                    // timed images per size: the bundle's example prompts (else classes) in turn
  std::uint64_t seed = 0;            // image i uses seed + i
};
// Throws Error for a method the bundle cannot run or one without a draft size; Error("cancelled") when `cancel` is set.
DraftSizeTable tune_draft_sizes(Engine& engine, const TuneParams& params, const Callbacks& callbacks = {},
                                const std::atomic<bool>* cancel = nullptr);
// Adds `table` to the file (replacing the table of its key), atomically; returns a note when an unreadable file was
// replaced, else "". Throws Error naming the file when it cannot be written.
std::string save_draft_sizes(const std::string& file, const DraftSizeTable& table);

// What a benchmark runs on, for its table: CPU model and cores, LibTorch version, the BLAS library loaded (and
// OpenBLAS's kernel set), the decode step's kernels, device.
std::string describe_runtime(const std::string& device);

// A bundle with random weights of a preset size, for tests, demos and benchmarks.
struct RandomBundleParams {
  std::string out_dir;
  std::string preset = "small";  // "tiny" | "small" | "base" | "llamagen-b" | "llamagen-l" | "llamagen-xl"
  std::string condition = "text";  // "text" | "class" | "t5" (LlamaGen T2I: 120 caption slots read by t5_dir)
  std::string t5_dir;              // condition "t5": the T5 folder the bundle refers to (create_random_t5_folder makes one)
  int dim = 0, n_layer = 0, n_head = 0, grid = 0, vocab = 0;  // 0: the preset's value
  std::uint64_t seed = 0;
  bool fp16 = false;  // store weights as F16
  bool drafters = true;  // random eagle and lisa drafters, SSD heads, a low-resolution drafter (even grids) and
                         // soft-verification bounds, so every method runs
  std::string to_string() const;
};
void create_random_bundle(const RandomBundleParams& params);

// A T5 encoder folder in the Hugging Face layout with random weights (config.json, model.safetensors, and a copy of
// `spiece` as spiece.model): for timing and memory of real sizes, e.g. flan-t5-xl's encoder (1.2 B parameters).
struct RandomT5Params {
  std::string out_dir;
  std::string preset = "tiny";  // "tiny" (the shapes of tests/fixtures/llamagen-t2i/t5_tiny) | "flan-t5-xl"
  std::string spiece;           // a SentencePiece model to copy in
  bool bf16 = false;            // store weights as BF16 (as flan-t5-xl is usually run)
  std::uint64_t seed = 0;
};
void create_random_t5_folder(const RandomT5Params& params);

// Converts LlamaGen's checkpoints (torch.save `.pt` files, read without Python and without executing them) into a
// bundle folder, written atomically: class-conditional (c2i) GPTs, and text-to-image (t2i) GPTs with the T5 folder
// they read captions with (the bundle refers to that folder and checks it at load). Throws Error naming the file, tensor or
// key at fault; `report` lines say what was inferred from where and what was left out.
struct ConvertParams {
  std::string gpt_path;   // e.g. c2i_B_256.pt
  std::string vq_path;    // e.g. vq_ds16_c2i.pt
  std::string t5_dir;     // t2i GPTs: the Flan-T5 folder (Hugging Face layout); must be empty for c2i
  std::string out_dir;    // must not exist yet
  std::string name;       // bundle name; empty: "llamagen-" + the GPT file's stem
  std::string state_key;  // the checkpoint entry holding the weights ("model", "ema", ...); empty: automatic
  std::vector<std::pair<std::string, std::string>> overrides;  // key=value, see llamagen_override_keys()
};
struct ConvertReport {
  std::string out_dir;
  std::vector<std::string> lines;
};
ConvertReport convert_llamagen(const ConvertParams& params);
// The override keys ConvertParams::overrides accepts, with what each sets.
const std::vector<std::pair<std::string, std::string>>& llamagen_override_keys();

// LANTERN's LlamaGen T2I drafter (config.json + pytorch_model.bin) into a converted T2I bundle as its eagle drafter.
struct LanternDrafterParams {
  std::string drafter_dir;  // config.json + pytorch_model.bin
  std::string bundle_dir;   // a converted LlamaGen T2I bundle; its manifest gains drafters.eagle
};
ConvertReport import_lantern_drafter(const LanternDrafterParams& params);

// What `speculum-cli inspect` prints: a bundle folder or a single safetensors file.
struct TensorSummary {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t bytes = 0;
  std::string shape_text() const;  // "[3, 4]"
};
struct FileSummary {
  std::string path;
  std::uint64_t file_size = 0;
  std::int64_t parameters = 0;
  std::vector<TensorSummary> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;
};
struct InspectReport {
  std::string manifest_json;  // empty for a lone safetensors file
  std::vector<FileSummary> files;
  std::vector<std::string> problems;  // validation findings; empty when the bundle loads
  std::vector<std::string> ignored;   // tensors present that the engine does not use (they load; reported only)
};
InspectReport inspect(const std::string& path);

}  // namespace speculum
