#include "generation_worker.h"

#include <algorithm>

namespace speculum::ui {

QImage to_qimage(const Image& image) {
  return QImage(image.rgb.data(), image.width, image.height, image.width * 3, QImage::Format_RGB888).copy();
}

QImage preview_image(const Engine& engine, const GridState& grid) {
  if (grid.rows() != engine.info().grid_rows || grid.cols() != engine.info().grid_cols || grid.committed_count() == 0) return {};
  try {
    return to_qimage(engine.preview(grid.committed_tokens()).image);
  } catch (const Error&) {
    return {};  // tokens outside this model's codebook (a trace from another model)
  }
}

QImage low_res_preview_image(const Engine& engine, const GridState& grid, const vis::FrameStyle& style) {
  const auto& tokens = grid.low_res_tokens();
  if (!style.layers.count(vis::Layer::LowRes) || grid.low_res_rows() != engine.info().low_res_rows || grid.low_res_cols() != engine.info().low_res_cols ||
      std::none_of(tokens.begin(), tokens.end(), [](int t) { return t >= 0; }))
    return {};
  try {
    return to_qimage(engine.preview_low_res(tokens).image);
  } catch (const Error&) {
    return {};  // a trace from another model
  }
}

QImage LivePreview::image_for(const Engine& engine, const GridState& grid) {
  if (grid.committed_count() != committed_)
    pacer_.run_if_due([&] {
      image_ = preview_image(engine, grid);
      committed_ = grid.committed_count();
    });
  return image_;
}

GenerationWorker::GenerationWorker(Engine& engine) : engine_(engine) {}

WorkerThread::WorkerThread(Engine& engine) : worker_(new GenerationWorker(engine)) {
  worker_->moveToThread(&thread_);
  QObject::connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  thread_.start();
}

WorkerThread::~WorkerThread() {
  worker_->cancel();
  thread_.quit();
  thread_.wait();
}

void WorkerThread::generate(const GenerateParams& params) {
  QMetaObject::invokeMethod(worker_, [worker = worker_, params] { worker->generate(params); }, Qt::QueuedConnection);
}

std::vector<Event> GenerationWorker::take_events() {
  std::lock_guard lock(mutex_);
  return std::exchange(pending_, {});
}

void GenerationWorker::generate(const GenerateParams& params) {
  cancel_ = false;
  Callbacks callbacks;
  callbacks.event = [this](const Event& e) {
    std::lock_guard lock(mutex_);
    pending_.push_back(e);
  };
  try {
    const GenerateResult r = engine_.generate(params, callbacks, &cancel_);
    const RunMetrics& m = r.metrics;
    const QString summary = QString("%1 tokens, NFE %2, τ %3, %4 ms, %5 tokens/s")
                                .arg(m.tokens)
                                .arg(m.nfe)
                                .arg(m.mean_accepted_length(), 0, 'f', 2)
                                .arg(m.wall_ms, 0, 'f', 0)
                                .arg(m.tokens_per_second(), 0, 'f', 0);
    Q_EMIT finished(to_qimage(r.image), r.cancelled, summary);
  } catch (const std::exception& e) {
    Q_EMIT failed(QString::fromStdString(user_message(e)));
  }
}

}  // namespace speculum::ui
