// `sjd`: Speculative Jacobi Decoding (Teng et al., research/baselines-models.md A.4), training-free. A
// window of draft tokens after the last committed one is fed to the target in one causal forward; the
// drafts are verified left to right with min(1, p/q) against the new predictions, the first rejection is
// resampled from the residual, and the unverified tail's fresh predictions (with their distributions as q)
// become the next window's drafts, topped up from the left neighbour (or at random). Lossless.
#pragma once

#include "decoding/method.h"

namespace speculum {

MethodInfo sjd_method_info();

class SjdMethod final : public Method {
 public:
  SjdMethod(int window, bool random_init) : window_(window), random_init_(random_init) {}
  int extra_cache_slots() const override { return window_ + 1; }
  void run(DecodeSession& session) override;

 private:
  int window_;
  bool random_init_;
};

}  // namespace speculum
