// Animated GIF export of a generation (one frame per step, overlays included). Qt reads GIFs but does
// not write them, so this is a small LZW encoder with a fixed 6x6x6 colour cube plus a 40-step gray ramp; frames
// are written through QSaveFile, so a failed export never leaves half a file.
#pragma once

#include <QImage>
#include <QString>
#include <vector>

namespace speculum::ui {

// Throws speculum::Error naming the file on failure. All frames must have the size of the first.
void write_gif(const QString& path, const std::vector<QImage>& frames, int delay_centiseconds, bool loop = true);

// The palette index of a colour (exposed for the tests).
int gif_palette_index(QRgb color);
QRgb gif_palette_color(int index);

}  // namespace speculum::ui
