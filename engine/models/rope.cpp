#include "models/rope.h"

#include "models/decode_loops.h"

namespace speculum {

at::Tensor rope_table_2d(int rows, int cols, int head_dim, double base, int cls_token_num) {
  const int half = head_dim / 2;
  const auto opts = at::TensorOptions().dtype(at::kFloat);
  // freqs = 1 / base^(arange(0, half, 2)[:half/2] / half)
  const at::Tensor exponents = at::arange(0, half, 2, opts).slice(0, 0, half / 2) / half;
  const at::Tensor freqs = at::pow(base, exponents).reciprocal();
  const at::Tensor row_angles = at::outer(at::arange(rows, opts), freqs);  // [rows, hd/4]
  const at::Tensor col_angles = at::outer(at::arange(cols, opts), freqs);  // [cols, hd/4]
  const at::Tensor grid = at::cat({row_angles.unsqueeze(1).expand({rows, cols, half / 2}),
                                   col_angles.unsqueeze(0).expand({rows, cols, half / 2})},
                                  -1);  // [rows, cols, hd/2]
  const at::Tensor image = at::stack({at::cos(grid), at::sin(grid)}, -1).reshape({rows * cols, half, 2});
  return at::cat({at::zeros({cls_token_num, half, 2}, opts), image});
}

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& table_rows) {
  // (x0 + i x1) * (cos + i sin) = (x0 cos - x1 sin) + i (x1 cos + x0 sin): one complex multiply
  // per pair instead of a dozen real ops, which matters for single-token steps.
  const auto sizes = x.sizes();
  if (plain_cpu_floats({&x, &table_rows})) return rope_rows(x, table_rows);  // [rows, N, heads, hd] in one pass
  const at::Tensor pairs = at::view_as_complex(x.to(at::kFloat).reshape({sizes[0], sizes[1], sizes[2], sizes[3] / 2, 2}));
  const at::Tensor f = at::view_as_complex(table_rows.contiguous()).view({1, sizes[1], 1, sizes[3] / 2});
  return at::view_as_real(pairs * f).flatten(3).to(x.scalar_type());
}

}  // namespace speculum
