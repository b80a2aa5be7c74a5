// The torch.save reader is a parser of untrusted files: hostile pickles (code-running globals, unknown
// opcodes, huge lengths, deep nesting, views outside their storage, path-like record keys), malformed zip
// archives, truncations and flipped bytes must all end in a speculum::Error that names the problem, never a
// crash, a hang or an out-of-bounds read. A well-formed pickle built here by hand reads back exactly.
#include <cstring>
#include <random>

#include "io/torch_checkpoint.h"
#include "test_helpers.h"

using namespace speculum;

namespace {

std::string fixture(const std::string& name) { return std::string(SPECULUM_TEST_FIXTURES) + "/llamagen/" + name; }

std::string u16(std::uint32_t v) { return {char(v & 0xFF), char((v >> 8) & 0xFF)}; }
std::string u32(std::uint32_t v) { return u16(v & 0xFFFF) + u16(v >> 16); }

// A zip archive of stored entries, as torch.save writes one (no alignment padding needed).
std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries, std::uint16_t method = 0) {
  std::string body, directory;
  for (const auto& [name, data] : entries) {
    const auto offset = static_cast<std::uint32_t>(body.size());
    const auto size = static_cast<std::uint32_t>(data.size());
    body += u32(0x04034b50) + u16(20) + u16(0) + u16(method) + u16(0) + u16(0) + u32(0) + u32(size) + u32(size) +
            u16(static_cast<std::uint32_t>(name.size())) + u16(0) + name + data;
    directory += u32(0x02014b50) + u16(20) + u16(20) + u16(0) + u16(method) + u16(0) + u16(0) + u32(0) + u32(size) + u32(size) +
                 u16(static_cast<std::uint32_t>(name.size())) + u16(0) + u16(0) + u16(0) + u16(0) + u32(0) + u32(offset) + name;
  }
  const auto count = static_cast<std::uint32_t>(entries.size());
  return body + directory + u32(0x06054b50) + u16(0) + u16(0) + u16(count) + u16(count) +
         u32(static_cast<std::uint32_t>(directory.size())) + u32(static_cast<std::uint32_t>(body.size())) + u16(0);
}

// Pickle fragments (protocol 2 opcodes).
std::string str(const std::string& s) { return "X" + u32(static_cast<std::uint32_t>(s.size())) + s; }
std::string small_int(int v) { return "K" + std::string(1, char(v)); }
std::string tensor(const std::string& key, int numel, const std::vector<int>& size, const std::vector<int>& stride, int offset = 0) {
  std::string t = "ctorch._utils\n_rebuild_tensor_v2\n(";
  t += "(" + str("storage") + "ctorch\nFloatStorage\n" + str(key) + str("cpu") + small_int(numel) + "tQ";
  t += small_int(offset) + "(";
  for (int s : size) t += small_int(s);
  t += "t(";
  for (int s : stride) t += small_int(s);
  t += "t\x89" "ccollections\nOrderedDict\n)RtR";
  return t;
}
// {"model": {name: tensor}}
std::string state_dict_pickle(const std::string& name, const std::string& tensor_pickle) {
  return std::string("\x80\x02}") + str("model") + "ccollections\nOrderedDict\n)R" + str(name) + tensor_pickle + "ss.";
}

class Scratch {
 public:
  Scratch() { QVERIFY(dir_.isValid()); }
  std::string write(const std::string& bytes) {
    const std::string path = dir_.filePath(QString("f%1.pt").arg(n_++)).toStdString();
    test::write_bytes(path, bytes);
    return path;
  }
  std::string pickle_archive(const std::string& pickle, const std::string& record = std::string(16, '\0')) {
    return write(make_zip({{"archive/data.pkl", pickle}, {"archive/data/0", record}}));
  }

 private:
  QTemporaryDir dir_;
  int n_ = 0;
};

// Opens and reads every tensor; any failure must be a speculum::Error.
bool opens_cleanly(const std::string& path) {
  try {
    const TorchCheckpoint ckpt = TorchCheckpoint::open(path);
    for (const auto& t : ckpt.tensors()) ckpt.read(t);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

class TestTorchCheckpoint : public QObject {
  Q_OBJECT
  Scratch scratch_;

 private Q_SLOTS:
  void reads_the_official_fixture() {
    const TorchCheckpoint ckpt = TorchCheckpoint::open(fixture("c2i_tiny.pt"));
    QCOMPARE(ckpt.tensors().size(), std::size_t{18});
    const CheckpointTensor* emb = ckpt.find("tok_embeddings.weight");
    QVERIFY(emb);
    QCOMPARE(emb->shape(), (std::vector<std::int64_t>{256, 32}));
    QCOMPARE(emb->dtype(), DType::F32);
    QCOMPARE(ckpt.read(*emb).size(), std::size_t{256 * 32 * 4});
    const TorchCheckpoint prefixed = TorchCheckpoint::open(fixture("c2i_tiny_bf16_prefixed.pt"));
    QVERIFY(prefixed.find("tok_embeddings.weight") && prefixed.find("tok_embeddings.weight")->dtype() == DType::BF16);
  }

  // A transposed view (stride (1, 2)) of a 4-float storage reads back in the view's order.
  void strided_views_are_gathered() {
    const float values[4] = {1, 2, 3, 4};
    std::string record(16, '\0');
    std::memcpy(record.data(), values, 16);
    const std::string path = scratch_.pickle_archive(state_dict_pickle("w", tensor("0", 4, {2, 2}, {1, 2})), record);
    const TorchCheckpoint ckpt = TorchCheckpoint::open(path);
    const auto bytes = ckpt.read(ckpt.tensors().at(0));
    float got[4];
    std::memcpy(got, bytes.data(), 16);
    QCOMPARE(got[0], 1.0f);
    QCOMPARE(got[1], 3.0f);
    QCOMPARE(got[2], 2.0f);
    QCOMPARE(got[3], 4.0f);
  }

  void hostile_pickles_are_refused_by_name() {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"\x80\x02" "cos\nsystem\n" + str("echo pwned") + "\x85R.", "refused global 'os.system'"},
        {"\x80\x02" "c__builtin__\neval\n" + str("1") + "\x85R.", "refused global '__builtin__.eval'"},
        {std::string("\x80\x04\x8c\x08") + "builtins" + "\x8c\x04" + "exec" + "\x93.", "refused global 'builtins.exec'"},
        {"\x80\x02(ios\nsystem\n.", "refused opcode 0x69 'i'"},
        {"\x80\x02X\xf0\xff\xff\xff", "the pickle ends early"},
        {"\x80\x02" + std::string(5000, '('), "MARKs nested deeper than 4096"},
        {"\x80\x02h\x05.", "memo entry 5 was never stored"},
        {"\x80\x02}}.", "STOP with 2 values"},
        {"\x80\x02\x8a\x09" + std::string(9, '\x01') + ".", "integer of 9 bytes"},
        {"\x80\x02]" ".", "holds a list, not a dict"},
        {"\x80\x02}" + str("a") + "ccollections\nOrderedDict\n" + str("x") + "\x85Rs.", "OrderedDict called with arguments"},
        {state_dict_pickle("w", tensor("0", 4, {100}, {1})), "tensor reaches element 99 of storage '0', which has 4"},
        {state_dict_pickle("w", tensor("../../etc/passwd", 4, {4}, {1})), "storage key is not a short alphanumeric string"},
        {"\x80\x02}" + str("w") + "ctorch\nFloatStorage\n)Rs.", "REDUCE calls torch.FloatStorage"},
        {"\x80\x02" + std::string(16, '}') + ".", "STOP with 16 values"},
    };
    for (const auto& [pickle, expected] : cases) {
      const std::string path = scratch_.pickle_archive(pickle);
      QVERIFY2(test::throws_error_containing([&] { TorchCheckpoint::open(path); }, expected), expected.c_str());
    }
  }

  void storage_records_shorter_than_declared_are_refused() {
    const std::string path = scratch_.pickle_archive(state_dict_pickle("w", tensor("0", 100, {4}, {1})), std::string(16, '\0'));
    const TorchCheckpoint ckpt = TorchCheckpoint::open(path);  // the pickle itself is consistent
    QVERIFY(test::throws_error_containing([&] { ckpt.read(ckpt.tensors().at(0)); }, "holds 16 bytes, fewer than its 100 elements"));
    const std::string missing = scratch_.write(make_zip({{"archive/data.pkl", state_dict_pickle("w", tensor("7", 4, {4}, {1}))}}));
    const TorchCheckpoint no_record = TorchCheckpoint::open(missing);
    QVERIFY(test::throws_error_containing([&] { no_record.read(no_record.tensors().at(0)); }, "record 'archive/data/7', which is absent"));
  }

  void malformed_archives_are_refused() {
    const std::string pickle = state_dict_pickle("w", tensor("0", 4, {4}, {1}));
    QVERIFY(test::throws_error_containing([&] { TorchCheckpoint::open(scratch_.write(make_zip({{"archive/data.pkl", pickle}}, 8))); },
                                          "is compressed (method 8)"));
    QVERIFY(test::throws_error_containing([&] { TorchCheckpoint::open(scratch_.write(make_zip({{"x.txt", "hello"}}))); },
                                          "without '<name>/data.pkl'"));
    QVERIFY(test::throws_error_containing([&] { TorchCheckpoint::open(scratch_.write(std::string(4096, 'a'))); }, "not a zip archive"));
    QVERIFY(test::throws_error_containing([&] { TorchCheckpoint::open(scratch_.write("\x80\x02}q\x00." + std::string(64, '\0'))); },
                                          "legacy (pre-1.6, non-zip)"));
    std::string bad_directory = make_zip({{"archive/data.pkl", pickle}});
    bad_directory[bad_directory.size() - 3] = '\x7f';  // central directory offset far past the end
    QVERIFY(test::throws_error_containing([&] { TorchCheckpoint::open(scratch_.write(bad_directory)); }, "lies outside the file"));
    std::string big_entry = make_zip({{"archive/data.pkl", pickle}});
    const std::size_t size_field = big_entry.find(std::string("PK\x01\x02", 4)) + 24;  // central entry's uncompressed size
    big_entry.replace(size_field - 4, 8, u32(0x7fffffff) + u32(0x7fffffff));
    QVERIFY(test::throws_error_containing([&] { TorchCheckpoint::open(scratch_.write(big_entry)); }, "runs past the end of the file"));
  }

  // Every truncation of a real checkpoint fails cleanly (the zip directory sits at the end).
  void truncations_fail_cleanly() {
    const std::string bytes = test::read_bytes(fixture("c2i_tiny.pt"));
    const std::string path = scratch_.write("");
    int refused = 0, tried = 0;
    for (std::size_t cut = 0; cut < bytes.size(); cut += 97, ++tried) {
      test::write_bytes(path, bytes.substr(0, cut));
      refused += !opens_cleanly(path);
    }
    QCOMPARE(refused, tried);
  }

  // Random byte flips in the structure (headers, pickle, central directory) never crash or hang.
  void flipped_bytes_fail_cleanly_or_read_in_bounds() {
    const std::string original = test::read_bytes(fixture("c2i_tiny.pt"));
    const std::string path = scratch_.write("");
    std::mt19937 rng(2026);
    const std::size_t head = std::min<std::size_t>(original.size(), 4096), tail = 2048;
    int refused = 0;
    constexpr int kTrials = 3000;
    for (int trial = 0; trial < kTrials; ++trial) {
      std::string bytes = original;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        const std::size_t at = rng() % 2 ? rng() % head : original.size() - 1 - rng() % tail;
        bytes[at] = static_cast<char>(rng() % 2 ? bytes[at] ^ (1 << (rng() % 8)) : static_cast<char>(rng()));
      }
      test::write_bytes(path, bytes);
      refused += !opens_cleanly(path);
    }
    qInfo("%d of %d mutated checkpoints refused, the rest read in bounds", refused, kTrials);
    QVERIFY(refused > kTrials / 10);  // the mutations do reach the parser
  }
};

QTEST_GUILESS_MAIN(TestTorchCheckpoint)
#include "test_torch_checkpoint.moc"
