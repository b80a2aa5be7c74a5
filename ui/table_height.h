// Tables that show every row without scrolling (the comparison's and a bench result's: a handful of rows).
#pragma once

#include <QHeaderView>
#include <QTableWidget>

namespace speculum::ui {

inline void fit_height_to_rows(QTableWidget* table) {
  table->setFixedHeight(table->horizontalHeader()->sizeHint().height() + table->frameWidth() * 2 +
                        table->verticalHeader()->defaultSectionSize() * table->rowCount() + 2);
}

}  // namespace speculum::ui
