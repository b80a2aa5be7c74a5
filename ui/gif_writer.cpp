#include "gif_writer.h"

#include <QSaveFile>
#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>

#include "speculum.h"

namespace speculum::ui {

namespace {

constexpr std::size_t kColours = 256;

struct Weighted {
  QRgb colour;
  std::uint64_t count;
};

int channel(QRgb c, int k) { return k == 0 ? qRed(c) : k == 1 ? qGreen(c) : qBlue(c); }

// Median cut: start with one box of every distinct colour; split the box with the widest channel range
// (ties: more pixels) at the pixel-weighted median of that channel, until there are `colours` boxes; each
// box's colour is its pixel-weighted mean.
std::vector<QRgb> median_cut(std::vector<Weighted> histogram, std::size_t colours) {
  struct Box {
    std::size_t begin, end;
    int widest = 0, range = 0;
    std::uint64_t pixels = 0;
  };
  const auto measure = [&histogram](Box& box) {
    int lo[3] = {255, 255, 255}, hi[3] = {0, 0, 0};
    box.pixels = 0;
    for (std::size_t i = box.begin; i < box.end; ++i) {
      for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], channel(histogram[i].colour, k)), hi[k] = std::max(hi[k], channel(histogram[i].colour, k));
      box.pixels += histogram[i].count;
    }
    box.widest = 0;
    for (int k = 1; k < 3; ++k)
      if (hi[k] - lo[k] > hi[box.widest] - lo[box.widest]) box.widest = k;
    box.range = hi[box.widest] - lo[box.widest];
  };
  std::vector<Box> boxes{{0, histogram.size()}};
  measure(boxes.front());
  while (boxes.size() < colours) {
    const auto pick = std::max_element(boxes.begin(), boxes.end(), [](const Box& a, const Box& b) {
      return std::pair{a.range, a.pixels} < std::pair{b.range, b.pixels};
    });
    if (pick->range == 0) break;  // every box holds one colour
    Box box = *pick;
    std::sort(histogram.begin() + static_cast<std::ptrdiff_t>(box.begin), histogram.begin() + static_cast<std::ptrdiff_t>(box.end),
              [k = box.widest](const Weighted& a, const Weighted& b) { return channel(a.colour, k) < channel(b.colour, k); });
    std::uint64_t seen = 0;
    std::size_t cut = box.begin + 1;
    for (std::size_t i = box.begin; i + 1 < box.end; ++i) {
      seen += histogram[i].count;
      cut = i + 1;
      if (2 * seen >= box.pixels) break;
    }
    Box low{box.begin, cut}, high{cut, box.end};
    measure(low);
    measure(high);
    *pick = low;
    boxes.push_back(high);
  }
  std::vector<QRgb> palette;
  for (const Box& box : boxes) {
    double sum[3] = {0, 0, 0};
    for (std::size_t i = box.begin; i < box.end; ++i)
      for (int k = 0; k < 3; ++k) sum[k] += double(channel(histogram[i].colour, k)) * double(histogram[i].count);
    const auto mean = [&](int k) { return static_cast<int>(std::lround(sum[k] / double(box.pixels))); };
    palette.push_back(qRgb(mean(0), mean(1), mean(2)));
  }
  return palette;
}

// The nearest palette entry of each colour, cached (colours repeat a lot between frames).
class PaletteIndex {
 public:
  explicit PaletteIndex(const std::vector<QRgb>& palette) : palette_(palette) {}
  std::uint8_t operator()(QRgb c) {
    c |= 0xff000000u;
    auto it = cache_.find(c);
    if (it != cache_.end()) return it->second;
    int best = 0;
    long best_distance = -1;
    for (std::size_t i = 0; i < palette_.size(); ++i) {
      const long dr = qRed(c) - qRed(palette_[i]), dg = qGreen(c) - qGreen(palette_[i]), db = qBlue(c) - qBlue(palette_[i]);
      const long d = dr * dr + dg * dg + db * db;
      if (best_distance < 0 || d < best_distance) best_distance = d, best = static_cast<int>(i);
    }
    return cache_.emplace(c, static_cast<std::uint8_t>(best)).first->second;
  }

 private:
  const std::vector<QRgb>& palette_;
  std::unordered_map<QRgb, std::uint8_t> cache_;
};

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

std::vector<QRgb> gif_palette(const std::vector<QImage>& frames) {
  std::unordered_map<QRgb, std::uint64_t> counts;
  for (const QImage& frame : frames) {
    const QImage rgb = frame.convertToFormat(QImage::Format_RGB32);
    for (int y = 0; y < rgb.height(); ++y) {
      const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
      for (int x = 0; x < rgb.width(); ++x) ++counts[line[x] | 0xff000000u];
    }
  }
  std::vector<Weighted> histogram;
  histogram.reserve(counts.size());
  for (const auto& [colour, count] : counts) histogram.push_back({colour, count});
  std::sort(histogram.begin(), histogram.end(), [](const Weighted& a, const Weighted& b) { return a.colour < b.colour; });  // deterministic
  if (histogram.size() <= kColours) {
    std::vector<QRgb> exact;
    for (const auto& w : histogram) exact.push_back(w.colour);
    return exact;
  }
  return median_cut(std::move(histogram), kColours);
}

void write_gif(const QString& path, const std::vector<QImage>& frames, int delay_centiseconds, bool loop, bool dither) {
  if (frames.empty()) throw Error("GIF export '" + path.toStdString() + "': no frames");
  const QSize size = frames.front().size();
  for (const QImage& frame : frames)
    if (frame.size() != size) throw Error("GIF export '" + path.toStdString() + "': frames differ in size");
  std::vector<QRgb> palette = gif_palette(frames);
  palette.resize(kColours, qRgb(0, 0, 0));  // the table has 256 entries; unused ones are never referenced
  PaletteIndex index_of(palette);
  QByteArray bytes("GIF89a");
  put16(bytes, size.width());
  put16(bytes, size.height());
  bytes.append(static_cast<char>(0xF7));  // global colour table of 256 entries
  bytes.append('\0');
  bytes.append('\0');
  for (const QRgb c : palette) {
    bytes.append(static_cast<char>(qRed(c)));
    bytes.append(static_cast<char>(qGreen(c)));
    bytes.append(static_cast<char>(qBlue(c)));
  }
  if (loop) {
    bytes.append("\x21\xFF\x0BNETSCAPE2.0\x03\x01", 16);
    put16(bytes, 0);  // forever
    bytes.append('\0');
  }
  const int w = size.width(), h = size.height();
  for (const QImage& frame : frames) {
    const QImage rgb = frame.convertToFormat(QImage::Format_RGB32);
    std::vector<std::uint8_t> indices;
    indices.reserve(static_cast<std::size_t>(w) * h);
    // Floyd–Steinberg: each pixel's quantisation error spreads to its unvisited neighbours (this row and the next).
    std::vector<std::array<float, 3>> error(dither ? static_cast<std::size_t>(2 * (w + 2)) : 0, {0, 0, 0});
    for (int y = 0; y < h; ++y) {
      const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
      auto* here = dither ? &error[static_cast<std::size_t>((y % 2) * (w + 2)) + 1] : nullptr;
      auto* below = dither ? &error[static_cast<std::size_t>(((y + 1) % 2) * (w + 2)) + 1] : nullptr;
      if (dither) std::fill(below - 1, below + w + 1, std::array<float, 3>{0, 0, 0});
      for (int x = 0; x < w; ++x) {
        QRgb c = line[x];
        if (dither) {
          const auto clamp = [](float v) { return std::clamp(static_cast<int>(std::lround(v)), 0, 255); };
          c = qRgb(clamp(qRed(c) + here[x][0]), clamp(qGreen(c) + here[x][1]), clamp(qBlue(c) + here[x][2]));
        }
        const std::uint8_t i = index_of(c);
        indices.push_back(i);
        if (!dither) continue;
        const float e[3] = {float(qRed(c) - qRed(palette[i])), float(qGreen(c) - qGreen(palette[i])), float(qBlue(c) - qBlue(palette[i]))};
        for (int k = 0; k < 3; ++k) {
          here[x + 1][k] += e[k] * 7 / 16;
          below[x - 1][k] += e[k] * 3 / 16;
          below[x][k] += e[k] * 5 / 16;
          below[x + 1][k] += e[k] * 1 / 16;
        }
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
