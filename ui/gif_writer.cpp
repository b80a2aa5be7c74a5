#include "gif_writer.h"

#include <QSaveFile>
#include <array>
#include <cmath>
#include <unordered_map>

#include "error.h"

namespace speculum::ui {

namespace {

constexpr int kReds = 6, kGreens = 6, kBlues = 6;  // a 216-colour cube; indices 216..255 are a gray ramp
constexpr int kCube = kReds * kGreens * kBlues;
constexpr int kGrays = 256 - kCube;

int level(int value, int levels) { return (value * (levels - 1) + 127) / 255; }

class BitWriter {
 public:
  void put(int code, int size) {
    acc_ |= static_cast<std::uint32_t>(code) << bits_;
    bits_ += size;
    while (bits_ >= 8) {
      bytes_.push_back(static_cast<char>(acc_ & 0xff));
      acc_ >>= 8;
      bits_ -= 8;
    }
  }
  QByteArray finish() {
    if (bits_ > 0) bytes_.push_back(static_cast<char>(acc_ & 0xff));
    return bytes_;
  }

 private:
  QByteArray bytes_;
  std::uint32_t acc_ = 0;
  int bits_ = 0;
};

// GIF's variable-width LZW (min code size 8), as decoders expect it.
QByteArray lzw_encode(const std::vector<std::uint8_t>& indices) {
  constexpr int kMinCodeSize = 8, kClear = 1 << kMinCodeSize, kMaxCode = 4095;
  std::vector<std::array<std::uint16_t, 256>> next(kMaxCode + 1);  // 0 = no entry
  auto reset = [&] {
    for (auto& row : next) row.fill(0);
  };
  reset();
  BitWriter out;
  int code_size = kMinCodeSize + 1;
  int max_code = kClear + 1;
  out.put(kClear, code_size);
  int current = -1;
  for (std::uint8_t index : indices) {
    if (current < 0) {
      current = index;
    } else if (next[current][index]) {
      current = next[current][index];
    } else {
      out.put(current, code_size);
      next[current][index] = static_cast<std::uint16_t>(++max_code);
      if (max_code >= (1 << code_size)) ++code_size;
      if (max_code == kMaxCode) {
        out.put(kClear, code_size);
        reset();
        code_size = kMinCodeSize + 1;
        max_code = kClear + 1;
      }
      current = index;
    }
  }
  out.put(current, code_size);
  out.put(kClear, code_size);
  out.put(kClear + 1, kMinCodeSize + 1);
  return out.finish();
}

void put16(QByteArray& bytes, int value) {
  bytes.append(static_cast<char>(value & 0xff));
  bytes.append(static_cast<char>((value >> 8) & 0xff));
}

}  // namespace

int gif_palette_index(QRgb color) {
  const int r = qRed(color), g = qGreen(color), b = qBlue(color);
  if (std::abs(r - g) < 8 && std::abs(g - b) < 8 && std::abs(r - b) < 8) return kCube + level((r + g + b) / 3, kGrays);
  return (level(r, kReds) * kGreens + level(g, kGreens)) * kBlues + level(b, kBlues);
}

QRgb gif_palette_color(int index) {
  if (index >= kCube) {
    const int gray = (index - kCube) * 255 / (kGrays - 1);
    return qRgb(gray, gray, gray);
  }
  const int b = index % kBlues, g = (index / kBlues) % kGreens, r = index / (kBlues * kGreens);
  return qRgb(r * 255 / (kReds - 1), g * 255 / (kGreens - 1), b * 255 / (kBlues - 1));
}

void write_gif(const QString& path, const std::vector<QImage>& frames, int delay_centiseconds, bool loop) {
  if (frames.empty()) throw Error("GIF export '" + path.toStdString() + "': no frames");
  const QSize size = frames.front().size();
  QByteArray bytes("GIF89a");
  put16(bytes, size.width());
  put16(bytes, size.height());
  bytes.append(static_cast<char>(0xF7));  // global colour table of 256 entries
  bytes.append('\0');
  bytes.append('\0');
  for (int i = 0; i < 256; ++i) {
    const QRgb c = gif_palette_color(i);
    bytes.append(static_cast<char>(qRed(c)));
    bytes.append(static_cast<char>(qGreen(c)));
    bytes.append(static_cast<char>(qBlue(c)));
  }
  if (loop) {
    bytes.append("\x21\xFF\x0BNETSCAPE2.0\x03\x01", 16);
    put16(bytes, 0);  // forever
    bytes.append('\0');
  }
  // Colours repeat a lot between frames: cache the palette lookup.
  std::unordered_map<QRgb, std::uint8_t> lookup;
  for (const QImage& frame : frames) {
    if (frame.size() != size) throw Error("GIF export '" + path.toStdString() + "': frames differ in size");
    const QImage rgb = frame.convertToFormat(QImage::Format_RGB32);
    std::vector<std::uint8_t> indices;
    indices.reserve(static_cast<std::size_t>(size.width()) * size.height());
    for (int y = 0; y < size.height(); ++y) {
      const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
      for (int x = 0; x < size.width(); ++x) {
        const QRgb c = line[x] | 0xff000000u;
        auto it = lookup.find(c);
        if (it == lookup.end()) it = lookup.emplace(c, static_cast<std::uint8_t>(gif_palette_index(c))).first;
        indices.push_back(it->second);
      }
    }
    bytes.append("\x21\xF9\x04\x00", 4);  // graphic control: no transparency
    put16(bytes, delay_centiseconds);
    bytes.append("\x00\x00", 2);
    bytes.append('\x2C');
    put16(bytes, 0);
    put16(bytes, 0);
    put16(bytes, size.width());
    put16(bytes, size.height());
    bytes.append('\0');
    bytes.append('\x08');  // LZW minimum code size
    const QByteArray data = lzw_encode(indices);
    for (qsizetype i = 0; i < data.size(); i += 255) {
      const qsizetype n = std::min<qsizetype>(255, data.size() - i);
      bytes.append(static_cast<char>(n));
      bytes.append(data.constData() + i, n);
    }
    bytes.append('\0');
  }
  bytes.append('\x3B');

  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
    throw Error("cannot write '" + path.toStdString() + "': " + file.errorString().toStdString());
}

}  // namespace speculum::ui
