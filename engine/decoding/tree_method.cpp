#include "decoding/tree_method.h"

#include <algorithm>
#include <cmath>

#include "decoding/acceptance.h"
#include "decoding/draft_tree.h"
#include "error.h"
#include "sampling/distribution.h"

namespace speculum {
namespace {

// Defaults measured on this project's 2-core CPU with the default bundle (docs/benchmarks.md): a CPU pays
// for every verified token, so its best trees are small (LANTERN's LlamaGen GPU default is 4 / 10 / 59).
std::vector<ParamSpec> tree_specs(int depth, int top_k, int total_tokens) {
  return {{.name = "depth", .label = "Tree depth", .help = "Deepest draft (tokens ahead of the last committed one)",
           .unit = "tokens", .default_value = double(depth), .min = 1, .max = 16, .integer = true},
          {.name = "top_k", .label = "Branching", .help = "Children per expanded node, and nodes expanded per level",
           .default_value = double(top_k), .min = 1, .max = 32, .integer = true},
          {.name = "total_tokens", .label = "Tokens per pass",
           .help = "Draft tokens verified per target forward (the best-scored nodes)", .unit = "tokens",
           .default_value = double(total_tokens), .min = 1, .max = 128, .integer = true, .draft_size = true}};
}

// The (CFG, temperature, top-k, top-p) processed draft distributions [N, V] on the CPU of predicted features.
at::Tensor draft_distribution(const DecodeSession& s, const Drafter& drafter, const at::Tensor& predicted) {
  return s.distribution(drafter.logits(predicted)).to(at::kCPU).contiguous();
}

}  // namespace

MethodInfo eagle_method_info() {
  return {"eagle",
          "EAGLE-2: a one-layer drafter on the target's features grows a dynamic draft tree; one target forward "
          "verifies it with tree attention, exact sibling-by-sibling acceptance (lossless).",
          tree_specs(6, 3, 12)};
}

MethodInfo lantern_method_info() {
  auto specs = tree_specs(6, 3, 12);
  specs.push_back({.name = "neighbours", .label = "Neighbours k",
                   .help = "Nearest codebook neighbours considered for pooling (capped by the vocabulary)", .unit = "codes",
                   .default_value = 1000, .min = 1, .max = 16383, .integer = true});
  specs.push_back({.name = "delta", .label = "TV budget δ",
                   .help = "Probability mass pooled onto a draft from its neighbours (LANTERN)",
                   // The paper's 0.1. On the default bundle it loses 4.5 points of the quality protocol, so that
                   // bundle recommends 0.05, within the tolerance (its manifest's method_options).
                   .default_value = 0.1, .min = 0, .max = 1});
  specs.push_back({.name = "lambda", .label = "LANTERN++ bound λ",
                   .help = "LANTERN++: above 1 bounds the pooled probability by λ × p instead of δ; 0 = off",
                   .default_value = 0, .min = 0, .max = 100});
  specs.push_back(choice_param("static_tree", "Tree shape",
                               "EAGLE-2's dynamic tree, or a fixed shape by drafter ranks (LANTERN++)",
                               {"dynamic", "static"}, 0));
  return {
      "lantern",
      "LANTERN: the EAGLE-2 tree, verified with latent-neighbourhood pooling: a draft also counts the target mass of "
      "its nearest codes, within a total-variation budget (lossy, bounded).",
      specs};
}

MethodInfo lisa_method_info() {
  auto specs = tree_specs(8, 2, 12);  // soft acceptance makes deeper, narrower trees pay
  specs.push_back(choice_param("lisa_drafter", "Drafter",
                               "The EAGLE drafter, or the one trained with Locality-Informed Distillation",
                               {"EAGLE", "LISA"}, 1));
  // On: LISA's rule. On the default bundle it loses about 4 points of the quality protocol at every budget measured,
  // so that bundle recommends it off (its manifest's method_options; docs/benchmarks/studies.md).
  specs.push_back(toggle_param("soft", "Soft verification",
                               "On: Geometry-Aware Soft Verification after a strict rejection; off: exact verification only",
                               true));
  specs.push_back({.name = "budget", .label = "Soft budget",
                   .help = "Confidence gap a step's soft accepts may spend, in units of the calibrated delta_max",
                   .unit = "× delta_max", .default_value = 2, .min = 0, .max = 16});
  return {"lisa",
          "LISA (reconstruction): a locality-distilled drafter, and (soft = on) soft acceptance of drafts close in the "
          "codebook to what an unconfident target wants; strict acceptance stays the floor (lossless with soft off).",
          specs};
}

std::unique_ptr<Method> make_tree_method(const std::string& name, const MethodOptions& options,
                                         const MethodResources& r) {
  const MethodInfo info = name == "eagle"     ? eagle_method_info()
                          : name == "lantern" ? lantern_method_info()
                                              : lisa_method_info();
  TreeParams p;
  p.rule = name == "eagle" ? TreeRule::Exact : name == "lantern" ? TreeRule::Lantern : TreeRule::Lisa;
  p.depth = static_cast<int>(method_option(options, info, "depth"));
  p.top_k = static_cast<int>(method_option(options, info, "top_k"));
  p.total_tokens = static_cast<int>(method_option(options, info, "total_tokens"));
  std::string drafter = "eagle";
  if (p.rule == TreeRule::Lantern) {
    p.neighbours = static_cast<int>(method_option(options, info, "neighbours"));
    p.delta = method_option(options, info, "delta");
    p.lambda = method_option(options, info, "lambda");
    p.static_tree = method_option(options, info, "static_tree") != 0;
    if (p.lambda > 0 && p.lambda <= 1)
      throw Error("method 'lantern': lambda must be 0 (off) or > 1, got " + std::to_string(p.lambda));
  }
  if (p.rule == TreeRule::Lisa) {
    if (method_option(options, info, "lisa_drafter") != 0) drafter = "lisa";
    p.soft = method_option(options, info, "soft") != 0;
    p.budget = method_option(options, info, "budget");
    if (p.soft && !r.soft_bounds)
      throw Error("method 'lisa' needs soft-verification bounds, and bundle '" + r.bundle +
                  "' has none (run: speculum-cli calibrate --bundle " + r.bundle + "; or use soft=0)");
  }
  const auto it = r.drafters.find(drafter);
  if (it == r.drafters.end() || !it->second) {
    const std::string how = r.t5_conditioned && drafter == "eagle"
                                ? "import LANTERN's: speculum-cli convert lantern-drafter --drafter DIR --bundle " + r.bundle
                                : how_to_train(r, "speculum-cli train drafter --bundle " + r.bundle + " --objective " + drafter +
                                                      " --corpus CORPUS --out RUN --install");
    throw Error("method '" + name + "' needs the '" + drafter + "' drafter, and bundle '" + r.bundle + "' has none (" + how + ")");
  }
  if (p.rule != TreeRule::Exact && !r.geometry) throw Error("method '" + name + "' needs the codebook geometry");
  return std::make_unique<TreeMethod>(p, *it->second, r);
}

TreeMethod::TreeMethod(TreeParams params, const Drafter& drafter, const MethodResources& resources)
    : params_(params),
      drafter_(drafter),
      geometry_(resources.geometry),
      bounds_(resources.soft_bounds.value_or(SoftVerificationBounds{})) {}

namespace {

// One step's tree growth (EAGLE-2 §A.2.4): the root's top-k children, then `depth - 1` times the best
// `top_k` nodes of the newest level are fed to the drafter in one call (each seeing only its ancestors)
// and each gets its top-k children; finally the best `total_tokens` nodes by cumulative log q. With a
// static tree, ranks instead of probabilities score the nodes, so the shape does not depend on the draft.
DraftTree grow_tree(const DecodeSession& s, const Drafter& drafter, const TreeParams& params,
                    const at::Tensor& root_feature, int last, KVCache& draft_cache) {
  const int max_depth = std::min(params.depth, s.total_tokens() - 1 - last);
  DraftTree tree;
  std::vector<at::Tensor> feature_of;  // per node: the predicted feature [rows, 1, dim] its distribution came from
  // Children of each parent (rows of q [F, V]), from one top-k over the rows; features [rows, F, dim].
  const auto add_children = [&](const std::vector<int>& parents, const at::Tensor& q, const at::Tensor& features) {
    const auto k = std::min<std::int64_t>(params.top_k, q.size(1));
    const auto [top_values, top_indices] = at::topk(q, k);
    const at::Tensor values = top_values.contiguous(), indices = top_indices.contiguous();
    const float* value = values.data_ptr<float>();
    const std::int64_t* index = indices.data_ptr<std::int64_t>();
    std::vector<int> added;
    for (std::size_t i = 0; i < parents.size(); ++i) {
      const double parent_score = parents[i] < 0 ? 0 : tree.node(parents[i]).score;
      const at::Tensor feature = features.narrow(1, static_cast<std::int64_t>(i), 1);
      for (std::int64_t r = 0; r < k; ++r) {
        const float qv = value[i * k + r];
        if (qv <= 0) break;  // outside the processed support (top-k / top-p)
        const double score =
            parent_score + (params.static_tree ? -static_cast<double>(r) : std::log(static_cast<double>(qv)));
        added.push_back(tree.add(static_cast<int>(index[i * k + r]), parents[i], qv, score));
        feature_of.push_back(feature);
      }
    }
    return added;
  };
  std::vector<int> frontier = add_children({-1}, draft_distribution(s, drafter, root_feature), root_feature);
  std::vector<int> slot_node;  // drafter cache slots past the committed prefix -> tree node
  for (int depth = 2; depth <= max_depth && !frontier.empty(); ++depth) {
    const int f = static_cast<int>(frontier.size());
    std::vector<std::int64_t> tokens, positions;
    std::vector<at::Tensor> features;
    for (int node : frontier) {
      tokens.push_back(tree.node(node).token);
      positions.push_back(s.position_of(last + depth - 1));
      features.push_back(feature_of[node]);
    }
    // Frontier node i sees the tree slots of its ancestors and itself.
    const int m = static_cast<int>(slot_node.size()) + f;
    at::Tensor attend = at::zeros({f, m}, at::kBool);
    bool* visible = attend.data_ptr<bool>();
    for (int i = 0; i < f; ++i) {
      const std::vector<int> path = tree.path_to(frontier[i]);
      for (int j = 0; j < static_cast<int>(slot_node.size()); ++j)
        visible[i * m + j] = std::find(path.begin(), path.end(), slot_node[j]) != path.end();
      visible[i * m + static_cast<int>(slot_node.size()) + i] = true;
    }
    const at::Tensor predicted =
        drafter.forward(at::tensor(tokens, at::kLong), at::cat(features, 1), positions, attend, draft_cache);
    slot_node.insert(slot_node.end(), frontier.begin(), frontier.end());
    std::vector<int> level = add_children(frontier, draft_distribution(s, drafter, predicted), predicted);
    std::stable_sort(level.begin(), level.end(), [&](int a, int b) { return tree.node(a).score > tree.node(b).score; });
    if (static_cast<int>(level.size()) > params.top_k) level.resize(params.top_k);
    frontier = level;
  }
  return tree.best(params.total_tokens);
}

}  // namespace

void TreeMethod::run(DecodeSession& s) {
  const int total = s.total_tokens();
  KVCache draft_cache = drafter_.make_cache(s.cache().rows(), params_.depth * params_.top_k + 1);

  // Step 0: the prefix's forward gives token 0, as in ar, and the first feature.
  ForwardOutput out = s.commit_first_token(/*want_hidden=*/true);

  // Inputs the drafter has not seen yet: committed tokens with the target features that predicted them.
  std::vector<std::int64_t> pending_tokens = {s.tokens()[0]};
  at::Tensor pending_features;
  if (drafter_.prefix_rows() > 0) {  // LANTERN: the caption rows enter the drafter's context first
    s.drafting([&] {
      const at::Tensor features = drafter_.prefix_features(s.prefix());
      drafter_.read_prefix(features, draft_cache);
      pending_features = features.narrow(1, features.size(1) - 1, 1);
    });
  } else {
    pending_features = drafter_.feature(out.hidden.narrow(1, out.hidden.size(1) - 1, 1));
  }
  int last = 0;  // raster of the newest committed token; the target has not read it yet
  while (last + 1 < total && !s.cancel_requested()) {
    s.begin_step("verify");
    const int fresh = static_cast<int>(pending_tokens.size());
    std::vector<std::int64_t> fresh_positions;
    for (int i = 0; i < fresh; ++i) fresh_positions.push_back(s.position_of(last - fresh + 1 + i));
    const DraftTree tree = s.drafting([&] {
      const at::Tensor caught_up =
          drafter_.forward(at::tensor(pending_tokens, at::kLong), pending_features, fresh_positions, {}, draft_cache);
      const int committed_slots = draft_cache.length();
      DraftTree grown = grow_tree(s, drafter_, params_, caught_up.narrow(1, fresh - 1, 1), last, draft_cache);
      draft_cache.truncate(committed_slots);
      return grown;
    });

    Draft draft{s.step(), 0, "tree", {}, {}, {}, {}, {}};
    for (const DraftNode& n : tree.nodes()) {
      draft.cells.push_back(s.cell_of(last + n.depth));
      draft.tokens.push_back(n.token);
      draft.q_of_token.push_back(n.q);
      draft.tree_parent.push_back(n.parent);
      draft.tree_depth.push_back(n.depth);
    }
    s.emit(draft);

    // One target forward over [last committed token ; tree] with tree attention.
    ForwardInput in;
    std::vector<std::int64_t> tokens = {s.tokens()[last]};
    for (const DraftNode& n : tree.nodes()) tokens.push_back(n.token);
    in.tokens = at::tensor(tokens, at::kLong);
    in.positions = tree.positions(s.position_of(last));
    in.attend = tree.attend_mask();
    in.want_hidden = true;
    const int kv_begin = s.cache().length();
    out = s.forward(in);
    const at::Tensor p_rows = s.distribution(out.logits).to(at::kCPU).contiguous();  // row 0: root, row 1 + i: node i
    const auto vocab = p_rows.size(1);
    const auto row_of = [&](int row) {
      const float* begin = p_rows.data_ptr<float>() + row * vocab;
      return Probabilities(begin, begin + vocab);
    };

    // Walk from the root: children in draft-rank order, each tried under the (adjusted) target distribution.
    Verify verify{s.step(), 0, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
    std::vector<int> path;
    int current = -1;
    Probabilities p = row_of(0);
    bool residual = false;
    double soft_budget = params_.budget * bounds_.delta_max;
    for (bool advanced = true; advanced;) {
      advanced = false;
      for (int child : tree.children(current)) {
        const DraftNode& node = tree.node(child);
        const double u = s.uniform(RngStream::Accept, s.step(), child);
        const double p_x = p[node.token];
        PooledProbability pool;
        double acceptance = p_x;  // deterministic top-k drafts: q is one-hot at the draft
        if (params_.rule == TreeRule::Lantern) {
          pool = lantern_pool(p, node.token, geometry_->nearest(node.token),
                              std::min(params_.neighbours, geometry_->neighbours()), params_.delta, params_.lambda);
          acceptance = std::min(1.0, pool.p_tilde);
        }
        Decision decision =
            u < acceptance ? (u < p_x ? Decision::StrictAccept : Decision::SoftAccept) : Decision::Reject;
        SoftScore soft{-1, -1, 0, 0, 0, false};
        if (decision == Decision::Reject && params_.rule == TreeRule::Lisa && params_.soft) {
          soft = lisa_soft_score(p, node.token, geometry_->whitened(), bounds_, soft_budget);
          if (soft.accept) {
            decision = Decision::SoftAccept;
            soft_budget -= soft.delta;
          }
        }
        verify.cells.push_back(s.cell_of(last + node.depth));
        verify.tokens.push_back(node.token);
        verify.p_of_token.push_back(static_cast<float>(p_x));
        verify.q_of_token.push_back(node.q);
        verify.ratio.push_back(static_cast<float>(acceptance));
        verify.u.push_back(static_cast<float>(u));
        if (params_.rule == TreeRule::Lantern) verify.pooled_p.push_back(static_cast<float>(pool.p_tilde));
        verify.decisions.push_back(decision);
        verify.nodes.push_back(child);
        verify.soft_delta.push_back(static_cast<float>(soft.delta));
        verify.soft_g.push_back(static_cast<float>(soft.g));
        verify.soft_score.push_back(static_cast<float>(soft.score));
        if (decision != Decision::Reject) {
          path.push_back(child);
          current = child;
          p = row_of(child + 1);
          residual = false;
          advanced = true;
          break;
        }
        std::vector<int> removed = {node.token};
        removed.insert(removed.end(), pool.neighbours.begin(), pool.neighbours.end());
        p = remove_tokens(p, removed);
        residual = true;
      }
    }
    if (params_.rule != TreeRule::Lisa || !params_.soft) {
      verify.soft_delta.clear();
      verify.soft_g.clear();
      verify.soft_score.clear();
    }
    if (!verify.cells.empty()) s.emit(verify);

    // Keep the KV rows of the root and the accepted path; drop the rest of the tree.
    std::vector<int> keep = {kv_begin};
    std::vector<std::int64_t> feature_rows = {0};
    for (int node : path) {
      keep.push_back(kv_begin + 1 + node);
      feature_rows.push_back(1 + node);
    }
    s.cache().compact(kv_begin, keep);
    s.emit(KVRollback{s.step(), s.cache().length()});

    std::vector<int> rasters, committed;
    std::vector<float> probabilities;
    std::vector<std::int64_t> judging_rows;  // the target row each committed token was judged by
    pending_tokens.clear();
    int parent_row = 0;
    for (int node : path) {
      rasters.push_back(last + static_cast<int>(rasters.size()) + 1);
      committed.push_back(tree.node(node).token);
      probabilities.push_back(p_rows.data_ptr<float>()[parent_row * vocab + tree.node(node).token]);
      judging_rows.push_back(parent_row);
      pending_tokens.push_back(tree.node(node).token);
      parent_row = node + 1;
    }
    const int bonus_raster = last + static_cast<int>(path.size()) + 1;
    if (bonus_raster < total) {
      const int bonus =
          draw_token(at::from_blob(p.data(), {vocab}, at::kFloat), s.uniform(RngStream::Sample, s.step(), 0));
      s.emit(Resample{
          s.step(), 0, residual ? "residual" : "target", {s.cell_of(bonus_raster)}, {-1}, {bonus}, {p[bonus]}});
      rasters.push_back(bonus_raster);
      committed.push_back(bonus);
      probabilities.push_back(p[bonus]);
      judging_rows.push_back(parent_row);
      pending_tokens.push_back(bonus);
    }
    s.commit(rasters, committed, probabilities, p_rows.index_select(0, at::tensor(judging_rows, at::kLong)), kv_begin,
             kv_begin + static_cast<int>(keep.size()));
    pending_features = drafter_.feature(out.hidden.index_select(1, at::tensor(feature_rows, at::kLong).to(out.hidden.device())))
                           .narrow(1, 0, static_cast<std::int64_t>(pending_tokens.size()));
    last = rasters.back();
    const int tried = static_cast<int>(verify.cells.size());
    s.end_step(tried ? static_cast<double>(path.size()) / tried : 0.0);
  }
}

}  // namespace speculum
