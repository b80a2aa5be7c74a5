// A decoding method's own parameters as widgets, built from its ParamSpec list (labels, units, defaults, ranges,
// choices and help text come from the engine), so a method added to the engine appears here without UI changes:
// a switch is a check box, an enumeration a combo box, a number a spin box with its unit.
#pragma once

#include <QWidget>
#include <map>
#include <optional>

#include "speculum.h"

class QComboBox;
class QFormLayout;
class QLabel;

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
  // What `auto` draft sizes resolve to on this machine (ModelInfo::draft_sizes): the draft-size field says it, and a
  // note under the method says how the method's fastest size compares with ar here.
  void set_draft_sizes(const std::optional<DraftSizeTable>& table, int threads);
  // The loaded bundle's recommended options (ModelInfo::method_options) become the fields' defaults; values the user
  // changed from the defaults before are kept.
  void set_recommended(const std::map<std::string, MethodOptions>& recommended);

 Q_SIGNALS:
  void changed();

 private:
  void rebuild();
  double default_of(const std::string& method, const ParamSpec& spec) const;  // the bundle's, else the engine's

  QComboBox* method_ = nullptr;
  QWidget* params_ = nullptr;
  QFormLayout* params_layout_ = nullptr;
  QLabel* note_ = nullptr;
  std::map<std::string, QWidget*> fields_;  // spin box, check box (a switch) or combo box (an enumeration)
  std::optional<DraftSizeTable> draft_sizes_;
  std::map<std::string, MethodOptions> recommended_;
  int threads_ = 0;
};

}  // namespace speculum::ui
