// Animated GIF export of a generation (one frame per step, overlays included). Qt reads GIFs but does
// not write them, so this is a small LZW encoder. The 256-colour palette is fitted to the frames: their own
// colours when there are at most 256, else median cut over all frames' pixels (one global palette, so a colour
// does not flicker between frames); optional Floyd–Steinberg dithering. Frames are written through QSaveFile,
// so a failed export never leaves half a file.
#pragma once

#include <QImage>
#include <QString>
#include <vector>

namespace speculum::ui {

// Throws speculum::Error naming the file on failure. All frames must have the size of the first.
void write_gif(const QString& path, const std::vector<QImage>& frames, int delay_centiseconds, bool loop = true,
               bool dither = false);

// The palette write_gif uses for `frames` (at most 256 colours; exposed for the tests).
std::vector<QRgb> gif_palette(const std::vector<QImage>& frames);

}  // namespace speculum::ui
