// The small files of a T5 folder from outside: config.json (sizes, feed-forward kind) and a weight index (tensor ->
// shard names), as `convert llamagen --t5` and a T5 bundle's load read them. LANTERN's drafter config.json goes
// through the same JSON reader and is checked against a bundle (tests/malformed/lantern-configs).
#include <string>

#include "error.h"
#include "io/t5_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const speculum::T5Config config = speculum::parse_t5_config(text, "config.json");
    speculum::t5_encoder_tensor_specs(config);
  } catch (const speculum::Error&) {
  }
  try {
    speculum::parse_weight_index(text, "model.safetensors.index.json");
  } catch (const speculum::Error&) {
  }
  return 0;
}
