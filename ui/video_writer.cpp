#include "video_writer.h"

#include <opencv2/core/utils/logger.hpp>
#include <opencv2/videoio.hpp>

#include "speculum_tools.h"

namespace speculum::ui {

namespace {

// OpenCV logs every codec it fails to open; the fallback is expected, so keep its log quiet while trying.
class QuietOpenCv {
 public:
  QuietOpenCv() : before_(cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT)) {}
  ~QuietOpenCv() { cv::utils::logging::setLogLevel(before_); }
  QuietOpenCv(const QuietOpenCv&) = delete;
  QuietOpenCv& operator=(const QuietOpenCv&) = delete;

 private:
  cv::utils::logging::LogLevel before_;
};

}  // namespace

void write_mp4(const QString& path, const std::vector<QImage>& frames, double frames_per_second) {
  const std::string target = path.toStdString();
  if (frames.empty()) throw Error("video '" + target + "': no frames");
  const QSize size = frames.front().size();
  if (size.width() % 2 || size.height() % 2 || size.isEmpty())
    throw Error("video '" + target + "': frame sides must be even, got " + std::to_string(size.width()) + "x" +
                std::to_string(size.height()));
  check_replaceable(target);
  const std::string partial = target + ".partial.mp4";  // the extension picks the container
  cv::VideoWriter writer;
  {
    const QuietOpenCv quiet;
    for (const char* codec : {"avc1", "mp4v"}) {
      const int fourcc = cv::VideoWriter::fourcc(codec[0], codec[1], codec[2], codec[3]);
      if (writer.open(partial, cv::CAP_FFMPEG, fourcc, frames_per_second, cv::Size(size.width(), size.height()))) break;
    }
  }
  if (!writer.isOpened()) {
    std::remove(partial.c_str());
    throw Error("cannot write video '" + target + "': OpenCV's FFmpeg backend has no MP4 encoder (H.264 or MPEG-4)");
  }
  for (const QImage& frame : frames) {
    if (frame.size() != size) {
      writer.release();
      std::remove(partial.c_str());
      throw Error("video '" + target + "': every frame must have the first frame's size");
    }
    const QImage bgr = frame.convertToFormat(QImage::Format_BGR888);
    writer.write(cv::Mat(bgr.height(), bgr.width(), CV_8UC3, const_cast<uchar*>(bgr.constBits()), bgr.bytesPerLine()));
  }
  writer.release();
  replace_with(partial, target);
}

}  // namespace speculum::ui
