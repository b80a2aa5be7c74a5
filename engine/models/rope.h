// LlamaGen's 2D rotary position embedding (research/baselines-models.md B.1.3): hd/4 frequencies per
// axis, the first hd/4 complex pairs rotate by the row, the last hd/4 by the column, interleaved pairs
// (x[2i], x[2i+1]), and all-zero rows for the condition prefix (so its q and k vanish, as in LlamaGen).
#pragma once

#include <ATen/ATen.h>

namespace speculum {

// [cls_token_num + rows * cols, head_dim / 2, 2] holding (cos, sin), float32.
at::Tensor rope_table_2d(int rows, int cols, int head_dim, double base, int cls_token_num);

// x: [B, N, H, head_dim]; table_rows: [N, head_dim / 2, 2]. Computed in float32, returned in x's dtype.
at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& table_rows);

}  // namespace speculum
