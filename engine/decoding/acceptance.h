// The acceptance rules every speculative method verifies with, as small pure functions over processed
// distributions (research/seed-methods.md §1.2, §1.4, §2.4; baselines-models.md A.1, A.3).
//  - strict: accept x with probability min(1, p(x)/q(x)); on rejection draw from norm(max(0, p - q)).
//    Tree methods propose deterministic top-k picks, so q is one-hot at x: accept with probability p(x),
//    and the residual is p without x, renormalised. Lossless.
//  - LANTERN: pool onto x the mass of its nearest codes while it stays within a total-variation budget
//    δ (or, LANTERN++, within (λ − 1)·p(x)); accept with probability p̃(x).
//  - MuLo-SD: accept x when p(x) plus its k nearest codes' mass reaches a threshold τ (lossy).
//  - LISA (our reconstruction): after a strict rejection, accept softly when the draft is close in the
//    whitened codebook to the target's mode or the confidence gap is small, the target is not confident,
//    and the step's soft budget allows it. Strict acceptance stays the floor.
#pragma once

#include <ATen/ATen.h>

#include <span>
#include <vector>

#include "io/bundle.h"

namespace speculum {

// min(1, p/q); 1 when both are 0 is never asked for: q(x) > 0 for a drawn draft.
double strict_acceptance(double p_x, double q_x);

// Distributions here are plain float vectors on the host: a tree walk tries dozens of drafts per step,
// and tensor ops on 1,024-entry rows would cost more than the arithmetic.
using Probabilities = std::vector<float>;

// p [V] with `tokens` removed and the rest renormalised (the strict residual of deterministic drafts;
// LANTERN also removes the neighbours it pooled). Returns p unchanged if nothing would remain.
Probabilities remove_tokens(Probabilities p, const std::vector<int>& tokens);

// LANTERN's latent-neighbourhood pooling for draft x under p [V] (CPU float).
struct PooledProbability {
  double p_tilde = 0;           // p(x) + pooled mass
  double pooled = 0;            // the mass moved onto x = TV(p, p̃)
  std::vector<int> neighbours;  // the codes whose mass was pooled, nearest first
};
// `nearest` are x's nearest codes (self excluded), nearest first; k of them are considered. Budget:
// δ in (0, 1] caps the pooled mass (LANTERN); a `lambda` > 1 instead caps it at (λ − 1)·p(x) (LANTERN++).
PooledProbability lantern_pool(std::span<const float> p, int x, const int* nearest, int k, double delta,
                               double lambda = 0);

// MuLo-SD's pooled probability of draft x under p [V]: p(x) plus the mass of x's k nearest codes
// (`nearest`, self excluded, nearest first). The cell is accepted when it reaches τ (no budget, no residual).
double neighbourhood_probability(std::span<const float> p, int x, const int* nearest, int k);

// LISA's Geometry-Aware Soft Verification for draft x under p [V] (CPU float), after a strict rejection.
struct SoftScore {
  double delta = 0;       // Δ = log p(mode) − log p(x), the confidence gap
  double g = 0;           // ‖W(E[x] − E[mode])‖², whitened codebook distance
  double u = 0;           // min(alpha·Δ², beta·g)
  double score = 0;       // 1 − u / u_bound (≥ 0 inside the acceptance region), for the heat map
  double confidence = 0;  // p(mode)
  bool accept = false;
};
// `whitened` [V, d] (CPU float, contiguous): codebook rows divided by the per-dimension std. `budget_left`:
// the step's remaining soft budget in units of Δ (a soft accept spends its Δ).
SoftScore lisa_soft_score(std::span<const float> p, int x, const at::Tensor& whitened,
                          const SoftVerificationBounds& bounds, double budget_left);

}  // namespace speculum
