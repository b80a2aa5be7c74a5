#include "method_params_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace speculum::ui {

MethodParamsForm::MethodParamsForm(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  method_ = new QComboBox(this);
  for (const MethodInfo& m : available_methods()) {
    method_->addItem(QString::fromStdString(m.name));
    method_->setItemData(method_->count() - 1, QString::fromStdString(m.summary), Qt::ToolTipRole);
  }
  layout->addWidget(method_);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  note_->setObjectName("draftSizeNote");
  layout->addWidget(note_);
  params_ = new QWidget(this);
  params_layout_ = new QFormLayout(params_);
  params_layout_->setContentsMargins(12, 0, 0, 0);
  params_layout_->setRowWrapPolicy(QFormLayout::WrapLongRows);  // a long label puts its field below it, never squeezed
  layout->addWidget(params_);
  connect(method_, &QComboBox::currentTextChanged, this, [this] {
    rebuild();
    Q_EMIT changed();
  });
  rebuild();
}

QString MethodParamsForm::method() const { return method_->currentText(); }

void MethodParamsForm::set_runnable(const std::vector<std::string>& methods) {
  auto* model = qobject_cast<QStandardItemModel*>(method_->model());
  for (int i = 0; i < method_->count(); ++i) {
    const bool runnable = std::find(methods.begin(), methods.end(), method_->itemText(i).toStdString()) != methods.end();
    QStandardItem* item = model ? model->item(i) : nullptr;
    if (!item) continue;
    item->setEnabled(runnable);
    if (!runnable)
      item->setToolTip("This bundle lacks what the method needs (a trained drafter or calibrated bounds); see "
                       "speculum-cli train drafter and speculum-cli calibrate.");
  }
}

void MethodParamsForm::set_draft_sizes(const std::optional<DraftSizeTable>& table, int threads) {
  draft_sizes_ = table;
  threads_ = threads;
  const MethodOptions kept = options();
  rebuild();
  set_options(kept);
}

void MethodParamsForm::set_recommended(const std::map<std::string, MethodOptions>& recommended) {
  MethodOptions edited;
  const MethodOptions now = options();
  for (const MethodInfo& m : available_methods()) {
    if (m.name != method().toStdString()) continue;
    for (const ParamSpec& spec : m.params)
      if (now.count(spec.name) && now.at(spec.name) != default_of(m.name, spec)) edited[spec.name] = now.at(spec.name);
  }
  recommended_ = recommended;
  rebuild();
  set_options(edited);
}

double MethodParamsForm::default_of(const std::string& method, const ParamSpec& spec) const {
  if (spec.draft_size) return kAutoDraftSize;
  const auto bundle = recommended_.find(method);
  if (bundle == recommended_.end() || !bundle->second.count(spec.name)) return spec.default_value;
  return bundle->second.at(spec.name);
}

namespace {

QString times(double ratio) { return QString::number(ratio, 'f', 2) + "×"; }

// What auto means for `spec` here, for its tooltip and the note under the method.
QString auto_meaning(const ParamSpec& spec, const MethodTuning* tuned, const DraftSizeTable* table, int threads) {
  if (!tuned)
    return QString("auto: the default %1 (no draft sizes measured for this bundle with %2 thread(s); speculum-cli tune "
                   "--threads %2 measures them)")
        .arg(spec.default_value)
        .arg(threads);
  return QString("auto: %1, the fastest %2 measured here (%3 %4 ar; speculum-cli tune, %5)")
      .arg(tuned->chosen)
      .arg(QString::fromStdString(spec.name))
      .arg(times(table->speedup(*tuned)))
      .arg(table->speedup(*tuned) >= 1 ? "faster than" : "the speed of")
      .arg(QString::fromStdString(table->measured_at.substr(0, 10)));
}

}  // namespace

bool MethodParamsForm::set_method(const QString& name) {
  const int index = method_->findText(name);
  const auto* model = qobject_cast<QStandardItemModel*>(method_->model());
  if (index < 0 || (model && model->item(index) && !model->item(index)->isEnabled())) return false;
  method_->setCurrentIndex(index);
  return true;
}

void MethodParamsForm::rebuild() {
  while (params_layout_->rowCount() > 0) params_layout_->removeRow(0);
  fields_.clear();
  const std::string name = method_->currentText().toStdString();
  for (const MethodInfo& m : available_methods()) {
    if (m.name != name) continue;
    method_->setToolTip(QString::fromStdString(m.summary));
    if (m.params.empty()) params_layout_->addRow(new QLabel("<i>no parameters</i>", params_));
    const MethodTuning* tuned = draft_sizes_ ? draft_sizes_->find(name) : nullptr;
    note_->setVisible(tuned != nullptr);
    if (tuned) {
      const double speedup = draft_sizes_->speedup(*tuned);
      const QString param = QString::fromStdString(tuned->param);
      const double fastest = draft_sizes_->speedup(tuned->fastest());
      if (speedup >= 1)
        note_->setText(QString("On this machine: %1 ar at %2 %3 (auto).").arg(times(speedup)).arg(param).arg(tuned->chosen));
      else if (fastest < 1)
        note_->setText(QString("<b>Slower than ar on this machine</b> at every %1 tried (best %2 at %3): its verification "
                               "passes cost more than the tokens they save here.")
                           .arg(param)
                           .arg(times(speedup))
                           .arg(tuned->chosen));
      else
        note_->setText(QString("<b>Slower than ar on this machine</b> at the %1 auto keeps (%2 at %3). %1 %4 is %5 ar here, but "
                               "changes what this lossy method draws: set it to trade quality for speed.")
                           .arg(param)
                           .arg(times(speedup))
                           .arg(tuned->chosen)
                           .arg(tuned->fastest().size)
                           .arg(times(fastest)));
    }
    for (const ParamSpec& spec : m.params) {
      const double initial = default_of(name, spec);
      // The tooltip names the identifier that --opt, traces and saved requests use, and whose default it is.
      const std::string whose = initial == spec.default_value
                                    ? ""
                                    : ", this bundle's; the engine's " + param_value_text(spec, spec.default_value);
      QString tip = QString::fromStdString(spec.help + " (" + spec.name + "; default " + param_value_text(spec, initial) + whose + ")");
      if (spec.draft_size)
        tip = QString::fromStdString(spec.help + " (" + spec.name + ")") + "\n" +
              auto_meaning(spec, tuned, draft_sizes_ ? &*draft_sizes_ : nullptr, threads_);
      const QString unit = spec.unit.empty() ? QString() : " " + QString::fromStdString(spec.unit);
      // A count's unit follows its value: "1 round", "2 rounds".
      const auto follow_count = [spec](QSpinBox* box) {
        const auto update = [spec, box](int value) {
          box->setSuffix(spec.unit.empty() ? QString() : " " + QString::fromStdString(param_unit_text(spec, value)));
        };
        update(box->value());
        connect(box, &QSpinBox::valueChanged, box, update);
      };
      QWidget* field = nullptr;
      if (spec.toggle) {
        auto* box = new QCheckBox(params_);
        box->setChecked(initial != 0);
        connect(box, &QCheckBox::toggled, this, &MethodParamsForm::changed);
        field = box;
      } else if (!spec.choices.empty()) {
        auto* box = new QComboBox(params_);
        for (const std::string& choice : spec.choices) box->addItem(QString::fromStdString(choice));
        box->setCurrentIndex(int(std::lround(initial)));
        connect(box, &QComboBox::currentIndexChanged, this, &MethodParamsForm::changed);
        field = box;
      } else if (spec.draft_size) {  // one below the range reads "auto", the request's default
        auto* box = new QSpinBox(params_);
        box->setRange(int(spec.min) - 1, int(spec.max));
        box->setSpecialValueText("auto");
        box->setValue(box->minimum());
        follow_count(box);
        connect(box, &QSpinBox::valueChanged, this, &MethodParamsForm::changed);
        field = box;
      } else if (spec.integer) {
        auto* box = new QSpinBox(params_);
        box->setRange(int(spec.min), int(spec.max));
        box->setValue(int(std::lround(initial)));
        follow_count(box);
        connect(box, &QSpinBox::valueChanged, this, &MethodParamsForm::changed);
        field = box;
      } else {
        auto* box = new QDoubleSpinBox(params_);
        box->setDecimals(3);
        box->setRange(spec.min, spec.max);
        box->setSingleStep((spec.max - spec.min) / 100);
        box->setSuffix(unit);
        box->setValue(initial);
        connect(box, &QDoubleSpinBox::valueChanged, this, &MethodParamsForm::changed);
        field = box;
      }
      field->setToolTip(tip);
      field->setObjectName(QString::fromStdString(spec.name));
      auto* label = new QLabel(QString::fromStdString(spec.label), params_);
      label->setToolTip(tip);
      params_layout_->addRow(label, field);
      fields_[spec.name] = field;
    }
  }
}

MethodOptions MethodParamsForm::options() const {
  MethodOptions options;
  for (const auto& [name, field] : fields_) {
    if (auto* i = qobject_cast<QSpinBox*>(field)) options[name] = i->specialValueText().isEmpty() || i->value() != i->minimum() ? i->value() : kAutoDraftSize;
    else if (auto* d = qobject_cast<QDoubleSpinBox*>(field)) options[name] = d->value();
    else if (auto* c = qobject_cast<QCheckBox*>(field)) options[name] = c->isChecked() ? 1 : 0;
    else if (auto* e = qobject_cast<QComboBox*>(field)) options[name] = e->currentIndex();
  }
  return options;
}

void MethodParamsForm::set_options(const MethodOptions& options) {
  for (const auto& [name, value] : options) {
    const auto it = fields_.find(name);
    if (it == fields_.end()) continue;
    if (auto* i = qobject_cast<QSpinBox*>(it->second))
      i->setValue(!i->specialValueText().isEmpty() && value == kAutoDraftSize ? i->minimum() : int(std::lround(value)));
    else if (auto* d = qobject_cast<QDoubleSpinBox*>(it->second)) d->setValue(value);
    else if (auto* c = qobject_cast<QCheckBox*>(it->second)) c->setChecked(value != 0);
    else if (auto* e = qobject_cast<QComboBox*>(it->second)) e->setCurrentIndex(int(std::lround(value)));
  }
}

}  // namespace speculum::ui
