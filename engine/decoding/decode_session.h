// Everything a method needs for one generation: the target and its cache, the condition prefix, the
// processed-distribution settings, seeded draws, the committed grid, and the event stream with step
// timing and NFE accounting. Methods talk to the world only through this.
#pragma once

#include <atomic>
#include <chrono>
#include <type_traits>
#include <cstdint>
#include <functional>
#include <vector>

#include "models/transformer.h"
#include "sampling/counter_rng.h"
#include "sampling/sampling_params.h"
#include "trace/events.h"

namespace speculum {

class DecodeSession {
 public:
  using EventSink = std::function<void(const Event&)>;
  using CommitHook = std::function<void(const std::vector<int>& tokens, int committed)>;
  using ConditionSource = std::function<ConditionPrefix(const Transformer& model)>;

  DecodeSession(const Transformer& target, KVCache& cache, ConditionPrefix prefix, SamplingParams sampling,
                std::uint64_t seed, EventSink sink, CommitHook on_commit, const std::atomic<bool>* cancel);

  const Transformer& target() const { return target_; }
  KVCache& cache() { return cache_; }
  const SamplingParams& sampling() const { return sampling_; }
  int rows() const { return target_.config().grid_rows; }
  int cols() const { return target_.config().grid_cols; }
  int total_tokens() const { return rows() * cols(); }
  Cell cell_of(int raster) const { return {raster / cols(), raster % cols()}; }
  std::int64_t position_of(int raster) const { return target_.config().cls_token_num + raster; }
  double uniform(RngStream stream, int step, int slot) const;

  bool cancel_requested() const { return cancel_ && cancel_->load(std::memory_order_relaxed); }
  const std::vector<int>& tokens() const { return tokens_; }  // raster order, -1 = not committed
  int committed() const { return committed_; }
  bool complete() const { return committed_ == total_tokens(); }

  // The forward input that feeds the condition prefix (logits for its last position only).
  ForwardInput prefix_input() const;
  const ConditionPrefix& prefix() const { return prefix_; }
  // The request's condition as a prefix of another model with the target's conditioning (MuLo-SD's
  // low-resolution drafter), one row per CFG stream; the engine sets the source.
  void set_condition_source(ConditionSource source) { condition_source_ = std::move(source); }
  ConditionPrefix condition_for(const Transformer& model) const;
  // The forward input that feeds `model`'s `prefix` (logits for its last position only).
  static ForwardInput prefix_input(const Transformer& model, const ConditionPrefix& prefix);
  // A whole first step for methods that draft from the first image token on: the prefix forward (with
  // the last block's output when `want_hidden`), token 0 drawn from it and committed. Returns that forward.
  ForwardOutput commit_first_token(bool want_hidden);
  // Timed target forward; counts one NFE.
  ForwardOutput forward(const ForwardInput& input);
  // Processed target distribution p [N, V] of model logits [rows, N, V].
  at::Tensor distribution(const at::Tensor& logits) const;

  void begin_step(const char* phase);
  void emit(Event event);
  // `target_rows` [n, V]: the processed target distribution that judged each committed token (not a
  // residual), summarised in the Commit event; `p_of_token` is what the method drew or accepted it with.
  void commit(const std::vector<int>& rasters, const std::vector<int>& tokens, const std::vector<float>& p_of_token,
              const at::Tensor& target_rows, int kv_begin, int kv_end);
  void end_step(double accept_rate);

  int step() const { return step_; }
  int nfe() const { return nfe_; }
  double forward_ms() const { return forward_ms_; }
  // Runs `work` (a drafter's forward, SSD's heads, MuLo-SD's low-resolution drafter and up-sampling) and counts
  // its wall time as drafting, so a run's time splits into target forwards, drafting and the rest.
  template <typename Work>
  decltype(auto) drafting(Work&& work) {
    const auto start = Clock::now();
    const auto count = [&] { draft_ms_ += std::chrono::duration<double, std::milli>(Clock::now() - start).count(); };
    if constexpr (std::is_void_v<decltype(work())>) {
      work();
      count();
    } else {
      auto result = work();
      count();
      return result;
    }
  }
  double draft_ms() const { return draft_ms_; }

 private:
  using Clock = std::chrono::steady_clock;

  const Transformer& target_;
  KVCache& cache_;
  ConditionPrefix prefix_;
  SamplingParams sampling_;
  std::uint64_t seed_;
  EventSink sink_;
  CommitHook on_commit_;
  const std::atomic<bool>* cancel_;
  ConditionSource condition_source_;

  std::vector<int> tokens_;
  int committed_ = 0;
  int step_ = -1;
  int nfe_ = 0;
  double forward_ms_ = 0;
  double draft_ms_ = 0;
  // per step
  Clock::time_point step_start_;
  int step_nfe_ = 0;
  double step_forward_ms_ = 0;
  int step_committed_ = 0;
};

}  // namespace speculum
