// A bundle's manifest (speculum.json): fields, types, ranges, limits and file names.
#include "error.h"
#include "fuzz_input.h"
#include "io/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  speculum::fuzz::write_input(data, size, "speculum.json");
  try {
    speculum::read_manifest(speculum::fuzz::scratch_folder());
  } catch (const speculum::Error&) {
  }
  return 0;
}
