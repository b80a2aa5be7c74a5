// A decoding method's own parameters as widgets, built from its ParamSpec list (defaults, ranges and
// help text come from the engine), so a method added to the engine appears here without UI changes.
#pragma once

#include <QWidget>
#include <map>

#include "speculum.h"

class QAbstractSpinBox;
class QComboBox;
class QFormLayout;

namespace speculum::ui {

class MethodParamsForm : public QWidget {
  Q_OBJECT
 public:
  explicit MethodParamsForm(QWidget* parent = nullptr);

  QString method() const;
  bool set_method(const QString& name);  // false (and nothing changes) for a method unknown or greyed out
  MethodOptions options() const;  // every parameter of the method, with its current value
  void set_options(const MethodOptions& options);  // unknown names ignored, missing ones keep their value
  // Greys out the methods the loaded bundle cannot run (say, one without drafters), saying why.
  void set_runnable(const std::vector<std::string>& methods);

 Q_SIGNALS:
  void changed();

 private:
  void rebuild();

  QComboBox* method_ = nullptr;
  QWidget* params_ = nullptr;
  QFormLayout* params_layout_ = nullptr;
  std::map<std::string, QAbstractSpinBox*> fields_;
};

}  // namespace speculum::ui
