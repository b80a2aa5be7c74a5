// The threads a decode step's products and attention are split across, kept awake between them.
//
// A 1-token step of the default model is ~40 small products and attentions of 2–10 µs each. Under
// OMP_WAIT_POLICY=PASSIVE (which LibTorch's GEMM needs to leave idle cores alone) each at::parallel_for wakes a
// sleeping thread for ~10 µs, so such steps stayed on one thread and a second core was of no use to them. The team's
// helpers instead spin for a short while after each piece of work (kSpinMicroseconds) and only then sleep, so the
// next product reaches them in well under a microsecond; while a step runs they stay awake, between requests they
// sleep.
//
// Thread rules: run() may be called from any thread. One caller at a time uses the helpers; a second caller meanwhile
// (two engines decoding at once) runs its parts itself, one after another, as does a process forked from one whose
// helpers were running. Parts compute disjoint outputs, so results never depend on how many threads ran them.
#pragma once

#include <cstdint>
#include <functional>

namespace speculum {

// Runs part(p) for every p in [0, parts) and returns when all have finished: part 0 on the calling thread, the others
// on helper threads (started on first use, as many as parts - 1 asks for). A part should not throw: one that does on a
// helper ends the process; on the calling thread its exception is rethrown once the helpers are done.
void run_on_team(int parts, const std::function<void(int)>& part);

// How many parts a piece of work of `work` multiply-adds should be cut into with `threads` threads: at least
// kMinTeamWork each, so a dispatch (well under a microsecond to an awake helper) stays small beside it.
int team_parts(std::int64_t work, int threads);

// A part must hold this many multiply-adds (or comparable steps) before it is worth a helper: measured with
// `bench --forward-cost --threads 2` on the default model (docs/benchmarks/studies.md, "A team for the step").
constexpr std::int64_t kMinTeamWork = 1 << 13;

// How long an idle helper spins before it sleeps.
constexpr int kSpinMicroseconds = 150;

}  // namespace speculum
