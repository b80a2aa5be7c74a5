// The small GPT the model tests build from random weights: two layers of width 64 on a 4 x 4 grid.
#pragma once

#include "models/model_config.h"

inline speculum::GptConfig small_gpt_config(speculum::ConditionKind kind = speculum::ConditionKind::Class) {
  speculum::GptConfig c;
  c.dim = 64;
  c.n_layer = 2;
  c.n_head = 4;
  c.vocab_size = 32;
  c.grid_rows = 4;
  c.grid_cols = 4;
  c.condition = kind;
  c.num_classes = 5;
  if (kind == speculum::ConditionKind::Text) {
    c.cls_token_num = 6;
    c.caption_dim = 16;
    c.text_vocab_size = 10;
  }
  return c;
}
