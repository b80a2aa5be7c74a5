// Limits on data from outside (bundles, traces, images, requests), in one place: each is enforced before
// anything is allocated for it and named in the error that enforces it. docs/limits.md lists them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace speculum::limits {

inline constexpr int kMaxGridSide = 128;            // tokens per side of a grid (LlamaGen at 1024 px: 64)
inline constexpr int kMaxVocab = 1 << 20;           // codes of a tokenizer, words of a text vocabulary
inline constexpr int kMaxImageSide = 8192;          // pixels per side of an image that is read
inline constexpr std::uint64_t kMaxImagePixels = 64ull << 20;
inline constexpr std::uint64_t kMaxImageFileBytes = 256ull << 20;  // an image file read (PNG requests, checked images)
inline constexpr std::size_t kMaxManifestBytes = 16u << 20;
inline constexpr int kMaxManifestDepth = 16;        // JSON nesting of a manifest
inline constexpr std::uint64_t kMaxTraceBytes = 4ull << 30;
inline constexpr std::size_t kMaxTraceLineBytes = 64u << 20;
inline constexpr int kMaxTraceLineDepth = 6;        // a valid event nests 3 deep (event, cells, cell)
inline constexpr std::size_t kMaxLabelChars = 256;  // method, phase, draft source, distribution, region kind
inline constexpr std::size_t kMaxParamsJsonBytes = 1u << 20;  // a trace's recorded request
// Magnitude of a number with a fraction or exponent in any JSON read: nlohmann casts such a number to an integer
// field, undefined beyond the integer's range (fuzz_trace found it).
inline constexpr double kMaxJsonFloat = 2147483647.0;
// Text-to-image: a T5 folder's small files, its sizes, and a prompt. LlamaGen's cleaning runs backtracking regular
// expressions whose time grows with the square of a word's length (a 2,000-letter word: ~0.6 s, 4,096: 2.4 s);
// 120 T5 tokens are rarely more than 600 characters.
inline constexpr std::uint64_t kMaxSentencePieceBytes = 64ull << 20;
inline constexpr std::uint64_t kMaxT5JsonBytes = 4ull << 20;  // config.json, *.index.json
inline constexpr int kMaxT5Width = 16384;                     // d_model, d_ff, d_kv x heads
inline constexpr int kMaxT5Layers = 128;
inline constexpr int kMaxT5Vocab = 1 << 20;
inline constexpr int kMaxT5Shards = 1024;
inline constexpr std::size_t kMaxPromptBytes = 2000;
inline constexpr int kMaxStepPasses = 1 << 16;      // target forward passes a trace may claim for one step
inline constexpr std::uint64_t kMaxTableBytes = 256ull << 20;  // CSV tables a user gives (eval results, training logs)
inline constexpr std::uint64_t kMaxSmallTextBytes = 64ull << 20;  // other text inputs: emoji lists, caption indexes, run files
inline constexpr int kMaxDraftNodes = 1 << 16;      // cells (tree nodes) of one Draft event; methods draft at most a grid

}  // namespace speculum::limits
