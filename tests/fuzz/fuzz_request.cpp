// A request as a PNG's `parameters` text chunk or a trace's RunBegin carries it (GenerateParams::from_json).
#include <string>

#include "error.h"
#include "speculum.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const speculum::GenerateParams params = speculum::GenerateParams::from_json(std::string(reinterpret_cast<const char*>(data), size));
    params.to_string();
    speculum::GenerateParams::from_json(params.to_json());  // what it writes it reads back
  } catch (const speculum::Error&) {
  }
  return 0;
}
