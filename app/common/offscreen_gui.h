// Font rendering (QPainter text, colour emoji) from a command-line tool needs a QGuiApplication;
// this one runs on the offscreen platform, so no display is required.
#pragma once

#include <QGuiApplication>
#include <memory>

namespace speculum::app {

class OffscreenGui {
 public:
  OffscreenGui() {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    app_ = std::make_unique<QGuiApplication>(argc_, argv_);
  }

 private:
  int argc_ = 1;
  char name_[16] = "speculum-cli";
  char* argv_[2] = {name_, nullptr};
  std::unique_ptr<QGuiApplication> app_;
};

}  // namespace speculum::app
