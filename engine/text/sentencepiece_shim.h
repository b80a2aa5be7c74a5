// SentencePiece behind a wall. Debian's libsentencepiece carries its own protobuf 3.14 and exports it; LibTorch loads
// the system's protobuf 3.21, and the two in one symbol scope abort at start-up ("compiled against version 3.14.0").
// So the engine never links libsentencepiece: a small shared library (libspeculum_sentencepiece.so, built beside the
// programs) links it and is opened with dlopen(RTLD_LOCAL | RTLD_DEEPBIND), which keeps each protobuf to its own
// library. This interface is all that crosses the wall: virtual calls need no symbol lookup.
#pragma once

#include <string>
#include <vector>

namespace speculum {

class SentencePieceShim {
 public:
  virtual ~SentencePieceShim() = default;
  virtual bool load(const std::string& serialized_model, std::string* error) = 0;
  virtual bool encode(const std::string& text, std::vector<int>* ids, std::string* error) const = 0;
  virtual bool encode_pieces(const std::string& text, std::vector<std::string>* pieces, std::string* error) const = 0;
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  virtual int piece_to_id(const std::string& piece) const = 0;
  virtual std::string id_to_piece(int id) const = 0;
  virtual int unk_id() const = 0;
  virtual int pad_id() const = 0;
  virtual int piece_count() const = 0;
};

}  // namespace speculum

// The one symbol the shim library exports.
extern "C" speculum::SentencePieceShim* speculum_sentencepiece_create();
