#include "decoding/decode_session.h"

#include <string>

#include "error.h"
#include "sampling/distribution.h"

namespace speculum {

DecodeSession::DecodeSession(const Transformer& target, KVCache& cache, ConditionPrefix prefix,
                             SamplingParams sampling, std::uint64_t seed, EventSink sink, CommitHook on_commit,
                             const std::atomic<bool>* cancel)
    : target_(target),
      cache_(cache),
      prefix_(std::move(prefix)),
      sampling_(sampling),
      seed_(seed),
      sink_(std::move(sink)),
      on_commit_(std::move(on_commit)),
      cancel_(cancel),
      tokens_(total_tokens(), -1) {}

double DecodeSession::uniform(RngStream stream, int step, int slot) const {
  return counter_uniform(seed_, stream, static_cast<std::uint64_t>(step), static_cast<std::uint64_t>(slot));
}

ForwardInput DecodeSession::prefix_input() const { return prefix_input(target_, prefix_); }

ForwardInput DecodeSession::prefix_input(const Transformer& model, const ConditionPrefix& prefix) {
  ForwardInput in;
  in.embeddings = prefix.embeddings;
  in.positions = model.prefix_positions();
  in.attendable = prefix.attendable;
  in.logits_last = 1;
  return in;
}

ConditionPrefix DecodeSession::condition_for(const Transformer& model) const {
  if (!condition_source_) throw Error("decoding bug: this session has no condition source for a second model");
  return condition_source_(model);
}

ForwardOutput DecodeSession::commit_first_token(bool want_hidden) {
  begin_step("commit");
  ForwardInput in = prefix_input();
  in.want_hidden = want_hidden;
  ForwardOutput out = forward(in);
  const at::Tensor p = distribution(out.logits.narrow(1, out.logits.size(1) - 1, 1))[0];
  const int token = draw_token(p, uniform(RngStream::Sample, step_, 0));
  commit({0}, {token}, {p[token].item<float>()}, cache_.length() - 1, cache_.length());
  end_step(1.0);
  return out;
}

ForwardOutput DecodeSession::forward(const ForwardInput& input) {
  const auto start = Clock::now();
  ForwardOutput out = target_.forward(input, cache_);
  if (out.logits.defined() && !out.logits.is_cpu()) out.logits = out.logits.to(at::kCPU);  // syncs the device
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  ++nfe_;
  ++step_nfe_;
  forward_ms_ += ms;
  step_forward_ms_ += ms;
  return out;
}

at::Tensor DecodeSession::distribution(const at::Tensor& logits) const {
  return target_distribution(logits, sampling_);
}

void DecodeSession::begin_step(const char* phase) {
  ++step_;
  step_start_ = Clock::now();
  step_nfe_ = 0;
  step_forward_ms_ = 0;
  step_committed_ = 0;
  emit(StepBegin{step_, phase, nfe_});
}

void DecodeSession::emit(Event event) {
  if (sink_) sink_(event);
}

void DecodeSession::commit(const std::vector<int>& rasters, const std::vector<int>& tokens,
                           const std::vector<float>& p_of_token, int kv_begin, int kv_end) {
  Commit c{step_, {}, tokens, p_of_token, kv_begin, kv_end};
  for (std::size_t i = 0; i < rasters.size(); ++i) {
    const int r = rasters[i];
    if (r < 0 || r >= total_tokens() || tokens_[r] != -1)
      throw Error("method bug: commit of cell " + std::to_string(r) + " that is outside the grid or already committed");
    tokens_[r] = tokens[i];
    c.cells.push_back(cell_of(r));
  }
  committed_ += static_cast<int>(rasters.size());
  step_committed_ += static_cast<int>(rasters.size());
  emit(std::move(c));
  if (on_commit_) on_commit_(tokens_, committed_);
}

void DecodeSession::end_step(double accept_rate) {
  const double wall = std::chrono::duration<double, std::milli>(Clock::now() - step_start_).count();
  emit(StepEnd{step_, step_committed_, step_nfe_, wall, step_forward_ms_, accept_rate});
}

}  // namespace speculum
