#include "text/t5_tokenizer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "error.h"
#include "io/input_file.h"
#include "io/limits.h"
#include "text/sentencepiece_shim.h"

namespace speculum {
namespace {

constexpr const char* kShimName = "libspeculum_sentencepiece.so";

#if defined(__SANITIZE_ADDRESS__)  // gcc
constexpr bool kSanitized = true;
#elif defined(__has_feature)  // clang
constexpr bool kSanitized = __has_feature(address_sanitizer);
#else
constexpr bool kSanitized = false;
#endif

// dlopen of the shim, once per process: beside the running program, in ../lib, then where the build put it.
using Create = SentencePieceShim* (*)();
Create shim_factory() {
  static std::once_flag once;
  static Create create = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      candidates.push_back((exe.parent_path() / kShimName).string());
      candidates.push_back((exe.parent_path().parent_path() / "lib" / kShimName).string());
    }
#ifdef SPECULUM_SHIM_DIR
    candidates.push_back(std::string(SPECULUM_SHIM_DIR) + "/" + kShimName);
#endif
    candidates.push_back(kShimName);  // LD_LIBRARY_PATH
    // RTLD_DEEPBIND keeps libsentencepiece's protobuf to itself; sanitizer runtimes refuse it (and the programs built
    // with them that load a T5 tokenizer do not load LibTorch's protobuf first).
    constexpr int kFlags = RTLD_NOW | RTLD_LOCAL | (kSanitized ? 0 : RTLD_DEEPBIND);
    for (const std::string& path : candidates) {
      if (path.find('/') != std::string::npos && !std::filesystem::exists(path, ec)) continue;
      void* handle = dlopen(path.c_str(), kFlags);
      if (!handle) {
        const char* why = dlerror();
        failure = path + ": " + (why ? why : "dlopen failed");
        continue;
      }
      create = reinterpret_cast<Create>(dlsym(handle, "speculum_sentencepiece_create"));
      if (create) return;
      failure = path + ": no speculum_sentencepiece_create";
    }
    if (failure.empty()) failure = std::string(kShimName) + " is neither beside the program nor on LD_LIBRARY_PATH";
  });
  if (!create) throw Error("T5's tokenizer is unavailable: " + failure + " (it is built with Speculum; reinstall or rebuild)");
  return create;
}

}  // namespace

T5Tokenizer T5Tokenizer::open(const std::string& path) {
  const std::string bytes = read_input_file(path, limits::kMaxSentencePieceBytes, "SentencePiece model");
  std::shared_ptr<SentencePieceShim> processor(shim_factory()());
  std::string error;
  if (!processor->load(bytes, &error))
    throw Error("'" + path + "' is not a SentencePiece model (" + error.substr(0, 120) + ")");
  T5Tokenizer tokenizer;
  tokenizer.eos_id_ = processor->piece_to_id("</s>");
  if (tokenizer.eos_id_ == processor->unk_id() || processor->id_to_piece(tokenizer.eos_id_) != "</s>")
    throw Error("'" + path + "': the SentencePiece model has no '</s>' piece, so it is not T5's tokenizer");
  tokenizer.pad_id_ = processor->pad_id() >= 0 ? processor->pad_id() : 0;
  tokenizer.processor_ = std::move(processor);
  return tokenizer;
}

std::vector<int> T5Tokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
  std::string error;
  if (!processor_->encode(text, &ids, &error)) throw Error("SentencePiece cannot encode the prompt: " + error.substr(0, 120));
  return ids;
}

std::vector<std::string> T5Tokenizer::pieces(const std::string& text) const {
  std::vector<std::string> out;
  std::string error;
  if (!processor_->encode_pieces(text, &out, &error)) throw Error("SentencePiece cannot encode the prompt: " + error.substr(0, 120));
  return out;
}

TokenizedCaption T5Tokenizer::tokenize(const std::string& text, int max_tokens) const {
  if (max_tokens < 1) throw Error("a caption needs room for at least the eos token");
  TokenizedCaption out;
  out.ids = encode(text);
  out.pieces = static_cast<int>(out.ids.size());
  const auto keep = static_cast<std::size_t>(max_tokens - 1);
  if (out.ids.size() > keep) {
    out.dropped_text = processor_->decode(std::vector<int>(out.ids.begin() + static_cast<std::ptrdiff_t>(keep), out.ids.end()));
    out.ids.resize(keep);
  }
  out.ids.push_back(eos_id_);
  return out;
}

int T5Tokenizer::vocab_size() const { return processor_->piece_count(); }

}  // namespace speculum
