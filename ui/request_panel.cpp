#include "request_panel.h"

#include <QComboBox>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRandomGenerator>
#include <QSpinBox>
#include <QToolButton>
#include <algorithm>
#include <cmath>
#include <limits>

#include "method_params_form.h"

namespace speculum::ui {

namespace {

// Completes the word under the cursor, not the whole line.
class WordCompleter : public QCompleter {
 public:
  using QCompleter::QCompleter;
  QStringList splitPath(const QString& path) const override { return {path.section(' ', -1)}; }
  QString pathFromIndex(const QModelIndex& index) const override {
    const QString line = static_cast<QLineEdit*>(widget())->text();
    const int space = line.lastIndexOf(' ');
    return line.left(space + 1) + index.data().toString();
  }
};

}  // namespace

RequestPanel::RequestPanel(const Engine& engine, QWidget* parent) : QWidget(parent), engine_(engine) {
  const ModelInfo& info = engine_.info();
  auto* form = new QFormLayout(this);

  if (info.text_conditioned) {
    prompt_ = new QLineEdit(this);
    if (info.free_text) {  // a T5 bundle reads any text: no vocabulary to complete from
      prompt_->setPlaceholderText("a photo of a corgi running on a beach at sunset");
      prompt_->setToolTip(QString("Any text. The model reads up to %1 T5 tokens (end of text included), after LlamaGen's "
                                  "caption cleaning (lower case, no URLs or HTML); longer prompts are cut, and the hint below says where")
                              .arg(info.max_prompt_words));
    } else {
      prompt_->setPlaceholderText("a red circle above a blue square on a gray background");
      QStringList words;
      for (const auto& w : info.text_vocab) words << QString::fromStdString(w);
      words.sort();
      auto* completer = new WordCompleter(words, prompt_);
      completer->setCaseSensitivity(Qt::CaseInsensitive);
      prompt_->setCompleter(completer);
      prompt_->setToolTip(QString("Up to %1 words from the model's vocabulary of %2").arg(info.max_prompt_words).arg(words.size()));
    }
    connect(prompt_, &QLineEdit::textChanged, this, &RequestPanel::validate);
    connect(prompt_, &QLineEdit::returnPressed, this, [this] {
      if (valid()) Q_EMIT submitted();
    });
    form->addRow("Prompt", prompt_);
    prompt_problem_ = new QLabel(this);
    prompt_problem_->setWordWrap(true);
    prompt_problem_->setStyleSheet("color: #D55E00");
    prompt_problem_->hide();
    form->addRow(prompt_problem_);
  } else {
    class_ = new QComboBox(this);
    class_->setEditable(true);
    class_->setInsertPolicy(QComboBox::NoInsert);
    QStringList names;
    for (std::size_t i = 0; i < info.classes.size(); ++i) {
      const QString label = QString("%1  %2").arg(i).arg(QString::fromStdString(info.classes[i]));
      class_->addItem(label, int(i));
      names << label;
    }
    auto* completer = new QCompleter(names, class_);
    completer->setFilterMode(Qt::MatchContains);  // search anywhere in the class name
    completer->setCaseSensitivity(Qt::CaseInsensitive);
    class_->setCompleter(completer);
    form->addRow("Class", class_);
  }

  auto* seed_row = new QHBoxLayout;
  seed_ = new QSpinBox(this);
  seed_->setRange(0, std::numeric_limits<int>::max());
  seed_->setToolTip("Same request and seed give the same image, on any thread count");
  auto* dice = new QToolButton(this);
  dice->setText("🎲");
  dice->setToolTip("Random seed");
  connect(dice, &QToolButton::clicked, this, &RequestPanel::randomize_seed);
  seed_row->addWidget(seed_, 1);
  seed_row->addWidget(dice);
  form->addRow("Seed", seed_row);
  batch_ = new QSpinBox(this);
  batch_->setRange(1, 64);
  batch_->setSuffix(" image(s)");
  batch_->setToolTip("Generate makes this many images with consecutive seeds; each lands in the History panel");
  form->addRow("Batch", batch_);

  const SamplingParams& defaults = info.sampling;  // the bundle's recommendation
  cfg_ = new QDoubleSpinBox(this);
  cfg_->setRange(0, 100);
  cfg_->setSingleStep(0.5);
  cfg_->setValue(defaults.cfg_scale);
  cfg_->setToolTip("Classifier-free guidance: uncond + s·(cond − uncond) for every s ≥ 0 (0: unconditional); 1 turns it off");
  if (!info.cfg_available) {
    cfg_->setValue(1);
    cfg_->setEnabled(false);
    cfg_->setToolTip("CFG is unavailable: this model's class table has no null row (trained without class dropout)");
  }
  form->addRow("CFG", cfg_);
  temperature_ = new QDoubleSpinBox(this);
  temperature_->setRange(0, 100);
  temperature_->setSingleStep(0.05);
  temperature_->setValue(defaults.temperature);
  temperature_->setToolTip("Divides the logits; 0 is greedy");
  form->addRow("Temperature", temperature_);
  top_k_ = new QSpinBox(this);
  top_k_->setRange(0, info.vocab_size);
  top_k_->setValue(defaults.top_k);
  top_k_->setSpecialValueText("off");
  top_k_->setToolTip("Keep the k most likely tokens (ties kept)");
  form->addRow("Top-k", top_k_);
  top_p_ = new QDoubleSpinBox(this);
  top_p_->setRange(0.01, 1);
  top_p_->setSingleStep(0.05);
  top_p_->setValue(defaults.top_p);
  top_p_->setToolTip("Keep the smallest set of tokens whose probability reaches p");
  form->addRow("Top-p", top_p_);

  method_ = new MethodParamsForm(this);
  method_->set_runnable(info.methods);
  method_->set_draft_sizes(info.draft_sizes, info.draft_size_key.threads);
  method_->set_recommended(info.method_options);
  form->addRow("Method", method_);
}

void RequestPanel::validate() {
  const QString text = prompt_->text().trimmed();
  problem_ = text.isEmpty() ? QString() : QString::fromStdString(engine_.check_prompt(text.toStdString()));
  // A prompt the model reads only in part runs, with a warning in another colour.
  const QString warning = problem_.isEmpty() && !text.isEmpty() ? QString::fromStdString(engine_.prompt_warning(text.toStdString())) : QString();
  prompt_problem_->setText(problem_.isEmpty() ? warning : problem_);
  prompt_problem_->setStyleSheet(problem_.isEmpty() ? "color: #B8860B" : "color: #D55E00");
  prompt_problem_->setVisible(!problem_.isEmpty() || !warning.isEmpty());
  Q_EMIT validity_changed(valid());
}

void RequestPanel::set_seed(int seed) { seed_->setValue(seed); }
int RequestPanel::batch_size() const { return batch_->value(); }
void RequestPanel::set_batch_size(int images) { batch_->setValue(images); }

bool RequestPanel::prompt_missing() const { return prompt_ && prompt_->text().trimmed().isEmpty(); }
QString RequestPanel::example_prompt() const { return prompt_ ? prompt_->placeholderText() : QString(); }
void RequestPanel::focus_prompt() {
  if (prompt_) prompt_->setFocus();
}

void RequestPanel::randomize_seed() { seed_->setValue(QRandomGenerator::global()->bounded(std::numeric_limits<int>::max())); }

GenerateParams RequestPanel::request() const {
  GenerateParams p;
  if (prompt_) {
    p.prompt = prompt_->text().trimmed().toStdString();
  } else {
    p.class_id = class_->currentData().toInt();
  }
  p.seed = static_cast<std::uint64_t>(seed_->value());
  p.method = method_->method().toStdString();
  p.method_options = method_->options();
  p.sampling.cfg_scale = static_cast<float>(cfg_->value());
  p.sampling.temperature = static_cast<float>(temperature_->value());
  p.sampling.top_k = top_k_->value();
  p.sampling.top_p = static_cast<float>(top_p_->value());
  return p;
}

bool RequestPanel::sampling_is_recommended() const {
  const SamplingParams& recommended = engine_.info().sampling;
  const auto shows = [](const QDoubleSpinBox* box, double value) {  // as the box displays it
    return std::abs(box->value() - value) < 0.5 * std::pow(10.0, -box->decimals());
  };
  return (!cfg_->isEnabled() || shows(cfg_, recommended.cfg_scale)) && shows(temperature_, recommended.temperature) &&
         top_k_->value() == recommended.top_k && shows(top_p_, recommended.top_p);
}

void RequestPanel::apply(const GenerateParams& p) {
  if (prompt_) prompt_->setText(QString::fromStdString(p.prompt));
  if (class_) {  // a class name (studio --prompt "golden retriever") picks its class; else the id
    const auto& names = engine_.info().classes;
    const auto named = std::find(names.begin(), names.end(), p.prompt);
    const int id = named != names.end() ? static_cast<int>(named - names.begin()) : p.class_id;
    if (id >= 0) class_->setCurrentIndex(class_->findData(id));
  }
  seed_->setValue(static_cast<int>(std::min<std::uint64_t>(p.seed, std::numeric_limits<int>::max())));
  method_->set_method(QString::fromStdString(p.method));
  method_->set_options(p.method_options);
  if (cfg_->isEnabled()) cfg_->setValue(p.sampling.cfg_scale);  // disabled: the model has no unconditional branch
  temperature_->setValue(p.sampling.temperature);
  top_k_->setValue(p.sampling.top_k);
  top_p_->setValue(p.sampling.top_p);
}

}  // namespace speculum::ui
