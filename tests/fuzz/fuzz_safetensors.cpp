// The safetensors reader: header JSON, dtypes, shapes, offsets and the data section's tiling.
#include "error.h"
#include "fuzz_input.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto file = speculum::SafetensorsFile::open(speculum::fuzz::write_input(data, size, "weights.safetensors"));
    volatile std::uint8_t sink = 0;
    for (const speculum::TensorInfo& tensor : file.tensors())  // every byte a header promises lies in the file
      if (tensor.end > tensor.begin) sink = sink ^ file.data(tensor)[0] ^ file.data(tensor)[tensor.end - tensor.begin - 1];
  } catch (const speculum::Error&) {
  }
  return 0;
}
