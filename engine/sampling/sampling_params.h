// How logits become the processed distribution p that every method samples from and verifies against.
#pragma once

#include <string>

namespace speculum {

struct SamplingParams {
  float cfg_scale = 4.0f;    // guided = uncond + cfg_scale * (cond - uncond); 1 turns CFG off (one stream)
  float temperature = 1.0f;  // logits / max(temperature, 1e-5)
  int top_k = 0;             // keep logits >= the k-th largest (ties kept, as LlamaGen); 0 = off
  float top_p = 1.0f;        // nucleus, HF semantics (the most likely token is always kept); 1 = off

  bool uses_cfg() const { return cfg_scale != 1.0f; }
  std::string to_string() const;
  void validate() const;  // throws speculum::Error naming the field and its allowed range
};

}  // namespace speculum
