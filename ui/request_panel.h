// Every control of a generation request: prompt (text models, with vocabulary completion and unknown
// words flagged while typing) or a searchable class list (class models), seed with a dice button,
// sampling, and the method with its own parameters. request() and apply() convert to and from
// GenerateParams, which is also how settings, PNGs and traces restore a run.
#pragma once

#include <QWidget>

#include "speculum.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace speculum::ui {

class MethodParamsForm;

class RequestPanel : public QWidget {
  Q_OBJECT
 public:
  RequestPanel(const Engine& engine, QWidget* parent = nullptr);

  GenerateParams request() const;
  void apply(const GenerateParams& params);
  // Whether the sampling controls still hold the bundle's recommendation (a remembered request that did not
  // change them follows the bundle's recommendation when that changes, instead of pinning an old default).
  bool sampling_is_recommended() const;
  bool valid() const { return problem_.isEmpty(); }
  // Text bundles: the prompt field is empty. Generating then asks for a prompt (the placeholder shows an
  // example) instead of silently drawing the example; focus_prompt() puts the cursor there.
  bool prompt_missing() const;
  QString example_prompt() const;
  void focus_prompt();
  void set_seed(int seed);
  void randomize_seed();
  int batch_size() const;  // Generate makes this many images, seeds seed, seed + 1, ...
  void set_batch_size(int images);

 Q_SIGNALS:
  void validity_changed(bool valid);
  void submitted();  // Enter in the prompt field

 private:
  void validate();

  const Engine& engine_;
  QString problem_;
  QLineEdit* prompt_ = nullptr;
  QLabel* prompt_problem_ = nullptr;
  QComboBox* class_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QSpinBox* batch_ = nullptr;
  QDoubleSpinBox* cfg_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QSpinBox* top_k_ = nullptr;
  QDoubleSpinBox* top_p_ = nullptr;
  MethodParamsForm* method_ = nullptr;
};

}  // namespace speculum::ui
