// 64-bit FNV-1a: the fingerprints files are recognised by (a T5 folder's tokenizer, a bundle's manifest and weights).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace speculum {

class Fnv1a {
 public:
  void add(const char* data, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) hash_ = (hash_ ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  }
  std::string hex() const {
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash_));
    return out;
  }

 private:
  std::uint64_t hash_ = 14695981039346656037ull;
};

}  // namespace speculum
