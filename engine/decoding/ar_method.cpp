#include "decoding/ar_method.h"

#include "sampling/distribution.h"

namespace speculum {

MethodInfo ar_method_info() {
  return {"ar", "Autoregressive baseline: one token per target forward, raster order.", {}};
}

void ArMethod::run(DecodeSession& s) {
  const int total = s.total_tokens();
  s.begin_step("commit");
  ForwardOutput out = s.forward(s.prefix_input());
  for (int i = 0; i < total; ++i) {
    const at::Tensor p = s.distribution(out.logits.narrow(1, out.logits.size(1) - 1, 1))[0];
    const int token = draw_token(p, s.uniform(RngStream::Sample, s.step(), 0));
    const int kv_end = s.cache().length();
    s.commit({i}, {token}, {p[token].item<float>()}, p.unsqueeze(0), kv_end - 1, kv_end);
    s.end_step(1.0);
    if (i + 1 == total || s.cancel_requested()) return;

    s.begin_step("commit");
    ForwardInput next;
    next.tokens = at::tensor({static_cast<std::int64_t>(token)}, at::kLong);
    next.positions = {s.position_of(i)};
    out = s.forward(next);
  }
}

}  // namespace speculum
