// Runs Engine::generate on its own thread. Events are queued under a mutex and drained by the UI at
// display rate (so painting never slows a fast method); the end of a run arrives as a queued signal.
// Previews are decoded by the window from the committed tokens, so they never count in a run's time.
#pragma once

#include <QImage>
#include <QObject>
#include <QThread>
#include <atomic>
#include <mutex>
#include <vector>

#include "frame_composer.h"
#include "speculum_tools.h"
#include "pacer.h"

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
  void finished(const QImage& image, bool cancelled, const QString& summary);
  void failed(const QString& message);

 private:
  Engine& engine_;
  std::atomic<bool> cancel_{false};
  std::mutex mutex_;
  std::vector<Event> pending_;
};

// A GenerationWorker on a thread of its own, for each view that runs generations (the window, the comparison,
// the X/Y plot): started on construction; destruction cancels a running generation and joins the thread, so
// the engine must outlive it.
class WorkerThread {
 public:
  explicit WorkerThread(Engine& engine);
  ~WorkerThread();
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  GenerationWorker* worker() const { return worker_; }  // connect to its signals; cancel() and take_events() from any thread
  void generate(const GenerateParams& params);          // queued: runs on the worker's thread

 private:
  QThread thread_;
  GenerationWorker* worker_;  // deleted on its own thread when that thread finishes
};

QImage to_qimage(const Image& image);
// The picture of a (partial) grid: its committed tokens decoded, open cells with the neutral token.
QImage preview_image(const Engine& engine, const GridState& grid);
// MuLo-SD's low-resolution grid as a picture for the LowRes layer's inset; null when `style` does not show that
// layer (no decode then), or the run has no such grid (or is from another model).
QImage low_res_preview_image(const Engine& engine, const GridState& grid, const vis::FrameStyle& style);

// The picture of a live run's grid, decoded on the UI thread only when cells were committed since the last
// decode, paced to at most 10 per second and 10 % of the time.
class LivePreview {
 public:
  QImage image_for(const Engine& engine, const GridState& grid);
  void reset() { *this = LivePreview(); }

 private:
  QImage image_;
  int committed_ = -1;
  Pacer pacer_{100, 0.1};
};

}  // namespace speculum::ui
