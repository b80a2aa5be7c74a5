// Counter-based randomness: every draw is a pure function of (seed, stream, step, slot), so a run is
// reproducible regardless of thread count, device, or which draws a method skips, and a replay can
// recompute any single draw (research/seed-methods.md §6.1).
#pragma once

#include <cstdint>

namespace speculum {

enum class RngStream : std::uint64_t { Sample = 1, Accept = 2, Resample = 3, Draft = 4, Data = 5 };

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 53 random bits.
constexpr double counter_uniform(std::uint64_t seed, RngStream stream, std::uint64_t step, std::uint64_t slot) {
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<std::uint64_t>(stream));
  h = splitmix64(h ^ step);
  h = splitmix64(h ^ slot);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace speculum
