// MP4 export of a generation, outside the engine: OpenCV's VideoWriter on its FFmpeg backend, H.264 when
// the FFmpeg build can encode it, else MPEG-4 Part 2 (every FFmpeg can). Written to a temporary file beside
// the target and renamed over it, so a failed export never leaves half a video or destroys the old one.
#pragma once

#include <QImage>
#include <QString>
#include <vector>

namespace speculum::ui {

// Throws speculum::Error naming the file on failure. All frames must have the size of the first, with
// even sides (4:2:0 video).
void write_mp4(const QString& path, const std::vector<QImage>& frames, double frames_per_second);

}  // namespace speculum::ui
