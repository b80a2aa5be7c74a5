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
  commit({0}, {token}, {p[token].item<float>()}, p.unsqueeze(0), cache_.length() - 1, cache_.length());
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

namespace {

// Entropy and top candidates of each row of `rows` [n, V] into the Commit event.
void summarise_distributions(const at::Tensor& rows, Commit& c) {
  const at::Tensor p = rows.to(at::kCPU, at::kFloat).contiguous();
  if (p.dim() != 2 || p.size(0) != static_cast<std::int64_t>(c.cells.size()))
    throw Error("method bug: " + std::to_string(c.cells.size()) + " committed cells but target rows of shape " +
                std::to_string(p.dim() == 2 ? p.size(0) : -1));
  const at::Tensor entropy = -(p * p.clamp_min(1e-30f).log()).sum(1);
  const std::int64_t k = std::min<std::int64_t>(kTopCandidates, p.size(1));
  const auto [top_p, top_tokens] = at::topk(p, k, 1);
  const at::Tensor tokens_int = top_tokens.to(at::kInt).contiguous(), p_sorted = top_p.contiguous();
  const auto tokens = tokens_int.accessor<int, 2>();
  const auto probabilities = p_sorted.accessor<float, 2>();
  c.entropy.assign(entropy.data_ptr<float>(), entropy.data_ptr<float>() + entropy.numel());
  for (std::int64_t row = 0; row < p.size(0); ++row)  // padded with token -1, p 0 past a smaller vocabulary
    for (std::int64_t j = 0; j < kTopCandidates; ++j) {
      c.top_tokens.push_back(j < k ? tokens[row][j] : -1);
      c.top_p.push_back(j < k ? probabilities[row][j] : 0.0f);
    }
}

}  // namespace

void DecodeSession::commit(const std::vector<int>& rasters, const std::vector<int>& tokens,
                           const std::vector<float>& p_of_token, const at::Tensor& target_rows, int kv_begin,
                           int kv_end) {
  Commit c{step_, {}, tokens, p_of_token, kv_begin, kv_end, {}, {}, {}};
  for (std::size_t i = 0; i < rasters.size(); ++i) {
    const int r = rasters[i];
    if (r < 0 || r >= total_tokens() || tokens_[r] != -1)
      throw Error("method bug: commit of cell " + std::to_string(r) + " that is outside the grid or already committed");
    tokens_[r] = tokens[i];
    c.cells.push_back(cell_of(r));
  }
  summarise_distributions(target_rows, c);
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
