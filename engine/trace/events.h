// The event stream every decoding method emits (research/seed-methods.md §6.2), as plain value types.
// No LibTorch here: the UI, the visualizers and the trace reader depend on this header alone.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace speculum {

struct Cell {
  int row = 0;
  int col = 0;
  friend bool operator==(const Cell&, const Cell&) = default;
};

enum class Decision { StrictAccept, SoftAccept, Reject };

// First event of a run: everything needed to replay it and to label it.
struct RunBegin {
  std::string method;
  std::string params_json;  // the full request (sampling, seed, prompt, method options) as JSON
  int grid_rows = 0;
  int grid_cols = 0;
  int vocab_size = 0;
  int low_res_rows = 0;  // MuLo-SD: the low-resolution drafter's grid (its Draft cells use it); 0 when none
  int low_res_cols = 0;
  friend bool operator==(const RunBegin&, const RunBegin&) = default;
};

struct StepBegin {
  int step = 0;
  std::string phase;  // "draft" | "verify" | "resample" | "commit"
  int fwd_passes_total = 0;
  friend bool operator==(const StepBegin&, const StepBegin&) = default;
};

struct Draft {
  int step = 0;
  int round = 0;
  // "tree" | "h_head(d)" | "v_head(d)" | "jacobi" | "upsampler"; and on the low-resolution grid (MuLo-SD):
  // "low_res" (the drafter's row) | "low_res_prefix" (committed rows shrunk back into its prefix)
  std::string source;
  std::vector<Cell> cells;
  std::vector<int> tokens;
  std::vector<float> q_of_token;
  std::vector<int> tree_parent;  // index into cells, -1 for a root; empty when not a tree
  std::vector<int> tree_depth;
  friend bool operator==(const Draft&, const Draft&) = default;
};

struct Frontier {
  int step = 0;
  std::vector<Cell> cells;
  friend bool operator==(const Frontier&, const Frontier&) = default;
};

struct Verify {
  int step = 0;
  int round = 0;
  std::vector<Cell> cells;
  std::vector<int> tokens;
  std::vector<float> p_of_token;
  std::vector<float> q_of_token;
  std::vector<float> ratio;
  std::vector<float> u;
  std::vector<float> pooled_p;  // MuLo-SD / LANTERN; empty otherwise
  std::vector<Decision> decisions;
  std::vector<int> nodes;  // tree methods: the node of the step's Draft each entry verifies; empty otherwise
  // LISA's soft verification, for entries the strict rule rejected: confidence gap Δ, whitened codebook
  // distance g, and score 1 − u/u_bound (≥ 0: inside the region). Δ = g = -1 where it was not consulted.
  std::vector<float> soft_delta;
  std::vector<float> soft_g;
  std::vector<float> soft_score;
  friend bool operator==(const Verify&, const Verify&) = default;
};

struct Resample {
  int step = 0;
  int round = 0;
  std::string dist;  // "residual" | "target" | "residual_excl_neighbours"
  std::vector<Cell> cells;
  std::vector<int> old_tokens;  // -1 where there was no draft
  std::vector<int> new_tokens;
  std::vector<float> p_of_token;
  friend bool operator==(const Resample&, const Resample&) = default;
};

// MuLo-SD's local rejection: the rejected seeds, their expansion (radius l) and each 8-connected island.
struct Region {
  int step = 0;
  std::string kind;  // "rejected_seed" | "expansion" | "island"
  int island_id = -1;
  int radius = 0;
  std::vector<Cell> cells;
  friend bool operator==(const Region&, const Region&) = default;
};

// How many of the target's most likely tokens a Commit records per cell.
inline constexpr int kTopCandidates = 5;

// Tokens become final. `p_of_token` is the probability each committed token was drawn or accepted with.
// The target's processed distribution at each cell, which judged it, is summarised by its entropy (nats)
// and its kTopCandidates most likely tokens (cell-major, most likely first): sharp versus flat, and what
// the target wanted where a draft was rejected. Empty in traces written before they were recorded.
struct Commit {
  int step = 0;
  std::vector<Cell> cells;
  std::vector<int> tokens;
  std::vector<float> p_of_token;
  int kv_begin = 0;
  int kv_end = 0;
  std::vector<float> entropy;
  std::vector<int> top_tokens;
  std::vector<float> top_p;
  friend bool operator==(const Commit&, const Commit&) = default;
};

struct KVRollback {
  int step = 0;
  int to_len = 0;
  friend bool operator==(const KVRollback&, const KVRollback&) = default;
};

struct StepEnd {
  int step = 0;
  int committed_cells = 0;  // committed in this step
  int fwd_passes_step = 0;
  double wall_ms = 0;     // whole step
  double forward_ms = 0;  // of which inside target forward passes
  double accept_rate_step = 0;
  friend bool operator==(const StepEnd&, const StepEnd&) = default;
};

struct RunEnd {
  int tokens = 0;  // committed image tokens
  int nfe = 0;     // target forward passes
  double wall_ms = 0;
  double forward_ms = 0;
  bool cancelled = false;
  double draft_ms = 0;  // drafting: drafters, heads, up-sampling (0 in traces written before it was recorded)
  friend bool operator==(const RunEnd&, const RunEnd&) = default;
};

using Event = std::variant<RunBegin, StepBegin, Draft, Frontier, Verify, Resample, Region, Commit,
                           KVRollback, StepEnd, RunEnd>;

// The name written in a trace's "type" field.
const char* event_type_name(const Event& event);
const char* decision_name(Decision decision);

}  // namespace speculum
