// Mutation fuzzer for the torch.save reader, built with AddressSanitizer and UBSan by
// scripts/fuzz-checkpoint.sh (not part of CTest: it runs for minutes). Each round mutates one of the
// fixture checkpoints (bit flips, random bytes, splices of pickle opcodes into data.pkl, truncations,
// length-field rewrites), opens it and reads every tensor; a speculum::Error is the expected outcome,
// anything else (a sanitizer report, another exception, a crash or a hang) is a bug.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <string>

#include "io/torch_checkpoint.h"
#include "error.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Opcodes a state-dict pickle uses, plus some it must refuse.
const std::string kOpcodes = "}])(NKMJXqrhjcQRbsuaet.\x80\x85\x86\x87\x88\x89\x8a\x8c\x93\x94\x95" "0i2GCBo";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: fuzz_torch_checkpoint ROUNDS SCRATCH_FILE CHECKPOINT...\n";
    return 2;
  }
  const long rounds = std::stol(argv[1]);
  const std::string scratch = argv[2];
  std::vector<std::string> seeds;
  for (int i = 3; i < argc; ++i) seeds.push_back(read_file(argv[i]));
  std::mt19937_64 rng(12345);
  long refused = 0, opened = 0;
  const auto start = std::chrono::steady_clock::now();
  for (long round = 0; round < rounds; ++round) {
    std::string bytes = seeds[rng() % seeds.size()];
    const std::size_t pickle_end = std::min<std::size_t>(bytes.size(), 4096);
    switch (rng() % 5) {
      case 0:  // flips anywhere in the structure
        for (int k = 1 + rng() % 8; k > 0; --k) {
          const std::size_t at = rng() % 2 ? rng() % pickle_end : bytes.size() - 1 - rng() % std::min<std::size_t>(bytes.size(), 4096);
          bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
        }
        break;
      case 1:  // random bytes
        for (int k = 1 + rng() % 8; k > 0; --k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
        break;
      case 2:  // an opcode spliced into the pickle (same length, so the zip stays consistent)
        for (int k = 1 + rng() % 4; k > 0; --k) bytes[64 + rng() % (pickle_end - 64)] = kOpcodes[rng() % kOpcodes.size()];
        break;
      case 3:  // truncation
        bytes.resize(rng() % bytes.size());
        break;
      default: {  // a 4-byte field rewritten with an extreme value
        const std::size_t at = rng() % (bytes.size() - 4);
        const std::uint32_t extremes[] = {0, 1, 0x7fffffff, 0xffffffff, 0xfffffff0, static_cast<std::uint32_t>(bytes.size())};
        const std::uint32_t v = extremes[rng() % 6];
        for (int b = 0; b < 4; ++b) bytes[at + static_cast<std::size_t>(b)] = static_cast<char>((v >> (8 * b)) & 0xFF);
      }
    }
    std::ofstream(scratch, std::ios::binary | std::ios::trunc) << bytes;
    try {
      const speculum::TorchCheckpoint ckpt = speculum::TorchCheckpoint::open(scratch);
      for (const auto& t : ckpt.tensors()) ckpt.read(t);
      ++opened;
    } catch (const speculum::Error&) {
      ++refused;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%ld rounds in %.1f s: %ld refused with an error, %ld opened and read in bounds, 0 crashes\n", rounds, s, refused, opened);
  return 0;
}
