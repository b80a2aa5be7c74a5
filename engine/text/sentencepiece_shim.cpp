// libspeculum_sentencepiece.so: the only code that links Debian's libsentencepiece (text/sentencepiece_shim.h says why).
#include "text/sentencepiece_shim.h"

#include <sentencepiece_processor.h>

namespace {

class Shim final : public speculum::SentencePieceShim {
 public:
  bool load(const std::string& serialized_model, std::string* error) override { return ok(sp_.LoadFromSerializedProto(serialized_model), error); }
  bool encode(const std::string& text, std::vector<int>* ids, std::string* error) const override { return ok(sp_.Encode(text, ids), error); }
  bool encode_pieces(const std::string& text, std::vector<std::string>* pieces, std::string* error) const override {
    return ok(sp_.Encode(text, pieces), error);
  }
  std::string decode(const std::vector<int>& ids) const override {
    std::string text;
    if (!sp_.Decode(ids, &text).ok()) text.clear();
    return text;
  }
  int piece_to_id(const std::string& piece) const override { return sp_.PieceToId(piece); }
  std::string id_to_piece(int id) const override { return id >= 0 && id < sp_.GetPieceSize() ? sp_.IdToPiece(id) : std::string(); }
  int unk_id() const override { return sp_.unk_id(); }
  int pad_id() const override { return sp_.pad_id(); }
  int piece_count() const override { return sp_.GetPieceSize(); }

 private:
  static bool ok(const sentencepiece::util::Status& status, std::string* error) {
    if (!status.ok() && error) *error = std::string(status.message());
    return status.ok();
  }
  sentencepiece::SentencePieceProcessor sp_;
};

}  // namespace

extern "C" __attribute__((visibility("default"))) speculum::SentencePieceShim* speculum_sentencepiece_create() { return new Shim(); }
