// Runs Engine::generate on its own thread. Events are queued under a mutex and drained by the UI at
// display rate (so painting never slows a fast method); previews and the end of a run arrive as
// queued signals.
#pragma once

#include <QImage>
#include <QObject>
#include <atomic>
#include <mutex>
#include <vector>

#include "speculum.h"

namespace speculum::ui {

class GenerationWorker : public QObject {
  Q_OBJECT
 public:
  explicit GenerationWorker(Engine& engine);

  void cancel() { cancel_ = true; }             // any thread
  std::vector<Event> take_events();             // any thread; returns what arrived since the last call

  // Call on the worker thread (queued), one request at a time.
  void generate(const GenerateParams& params);

 Q_SIGNALS:
  void preview_ready(const QImage& image, int committed, int total);
  void finished(const QImage& image, bool cancelled, const QString& summary);
  void failed(const QString& message);

 private:
  Engine& engine_;
  std::atomic<bool> cancel_{false};
  std::mutex mutex_;
  std::vector<Event> pending_;
};

QImage to_qimage(const Image& image);

}  // namespace speculum::ui
