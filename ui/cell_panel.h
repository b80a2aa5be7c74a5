// The cell under the pointer, as the target saw it: the committed token and the draft it had, each with
// the decoded look of its code, and the target's most likely tokens there (patch, token, p) with the
// distribution's entropy. The core of "why was this rejected": the draft's token beside what the target
// wanted. Patches come from the engine (Engine::token_patches) and are kept per token.
#pragma once

#include <QHash>
#include <QImage>
#include <QWidget>
#include <functional>
#include <optional>
#include <vector>

#include "speculum_tools.h"

namespace speculum::ui {

class CellPanel : public QWidget {
  Q_OBJECT
 public:
  using PatchSource = std::function<std::vector<QImage>(const std::vector<int>& tokens)>;
  explicit CellPanel(PatchSource patches, QWidget* parent = nullptr);

  // Shows `info` of cell (row, col) of a grid with `vocab_size` codes; keeps it after the pointer leaves.
  void show_cell(int row, int col, const CellInfo& info, int vocab_size);
  void clear();
  QSize sizeHint() const override { return {300, 300}; }

  // What the panel says, line by line (the painted text without the patches): for tests and tooltips.
  QStringList lines() const;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  struct Row {
    QString text;
    int token = -1;  // a patch is drawn before the text when >= 0
    float bar = -1;  // a probability bar after the text when >= 0
  };
  QImage patch(int token);

  PatchSource patches_;
  QHash<int, QImage> patch_cache_;
  std::vector<Row> rows_;
};

}  // namespace speculum::ui
