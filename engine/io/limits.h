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
inline constexpr int kMaxStepPasses = 1 << 16;      // target forward passes a trace may claim for one step

}  // namespace speculum::limits
