// The request as the engine ran it: its RunBegin records the parameters with every auto draft size made concrete,
// which is what a caption, the history and an exported PNG must repeat.
#pragma once

#include "speculum_tools.h"

namespace speculum::ui {

inline GenerateParams ran_request(const Timeline& timeline, const GenerateParams& fallback) {
  if (const auto& begin = timeline.run_begin()) {
    try {
      GenerateParams ran = GenerateParams::from_json(begin->params_json);
      ran.preview_every = fallback.preview_every;
      return ran;
    } catch (const Error&) {
      // not a request this engine wrote: keep what was asked
    }
  }
  return fallback;
}

}  // namespace speculum::ui
