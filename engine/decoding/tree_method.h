// Drafter-tree speculative decoding in raster order: EAGLE-2's dynamic draft tree (or a static one),
// verified by one target forward per step with tree attention, then walked from the root sibling by
// sibling under one of three rules (decoding/acceptance.h): exact (`eagle`, lossless), LANTERN's
// latent-neighbourhood pooling (`lantern`, LANTERN++ with a static tree and λ), and LISA's soft
// verification after a strict rejection (`lisa`). The accepted path's KV rows are compacted onto the
// committed prefix and a bonus token is drawn from the (residual) target distribution.
#pragma once

#include "decoding/method.h"
#include "decoding/method_resources.h"

namespace speculum {

enum class TreeRule { Exact, Lantern, Lisa };

MethodInfo eagle_method_info();
MethodInfo lantern_method_info();
MethodInfo lisa_method_info();

struct TreeParams {
  TreeRule rule = TreeRule::Exact;
  int depth = 6;
  int top_k = 3;
  int total_tokens = 12;
  bool static_tree = false;
  int neighbours = 1000;  // lantern
  double delta = 0.1;     // lantern: TV budget
  double lambda = 0;      // lantern: > 1 switches to LANTERN++'s relative bound p̃ <= λ·p
  bool soft = true;       // lisa: Geometry-Aware Soft Verification (off: the LISA drafter alone)
  double budget = 2;      // lisa: per step, soft accepts may spend budget × delta_max of confidence gap
};

class TreeMethod final : public Method {
 public:
  TreeMethod(TreeParams params, const Drafter& drafter, const MethodResources& resources);
  int extra_cache_slots() const override { return params_.total_tokens + 1; }
  void run(DecodeSession& session) override;

 private:
  TreeParams params_;
  const Drafter& drafter_;
  const CodebookGeometry* geometry_;
  SoftVerificationBounds bounds_;
};

// Builds eagle / lantern / lisa from validated options; errors name what the bundle lacks.
std::unique_ptr<Method> make_tree_method(const std::string& name, const MethodOptions& options,
                                         const MethodResources& resources);

}  // namespace speculum
