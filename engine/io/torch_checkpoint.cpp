#include "io/torch_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "error.h"

namespace speculum {
namespace {

constexpr std::uint64_t kMaxPickleBytes = 256u << 20;
const std::vector<std::string> kStateKeys = {"model", "module", "state_dict", "ema"};
const std::vector<std::string> kKeyPrefixes = {"module.", "_orig_mod."};

using Kind = PickleValue::Kind;

PickleRef lookup(const PickleValue& dict, const std::string& key) {
  for (const auto& [k, v] : dict.entries)
    if (k->kind == Kind::String && k->text == key) return v;
  return nullptr;
}

std::string strip_prefixes(std::string name, std::set<std::string>& stripped) {
  for (bool again = true; again;) {
    again = false;
    for (const auto& prefix : kKeyPrefixes)
      if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) {
        name.erase(0, prefix.size());
        stripped.insert(prefix);
        again = true;
      }
  }
  return name;
}

}  // namespace

TorchCheckpoint TorchCheckpoint::open(const std::string& path, const std::string& state_key) {
  TorchCheckpoint ckpt(ZipArchive::open(path));
  const std::string where = "'" + path + "'";
  const ZipEntry* pickle = nullptr;
  for (const auto& e : ckpt.zip_.entries()) {
    const std::size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      pickle = &e;
      ckpt.prefix_ = e.name.substr(0, slash + 1);
      break;
    }
  }
  if (!pickle) throw Error(where + " is a zip archive without '<name>/data.pkl': not a torch.save checkpoint");
  if (const ZipEntry* order = ckpt.zip_.find(ckpt.prefix_ + "byteorder")) {
    const std::string value = ckpt.zip_.read_all(*order, 16);
    if (value != "little") throw Error(where + " stores its tensors '" + value + "'-endian (only little-endian is read)");
  }
  const std::string bytes = ckpt.zip_.read_all(*pickle, kMaxPickleBytes);
  const PickleRef root = unpickle_state(bytes, where + " (" + pickle->name + ")");
  if (root->kind != Kind::Dict) throw Error(where + " holds a " + std::string(kind_name(root->kind)) + ", not a dict of tensors");

  PickleRef state = root;
  if (!state_key.empty()) {
    state = lookup(*root, state_key);
    if (!state || state->kind != Kind::Dict) throw Error(where + " has no dictionary under '" + state_key + "'");
    ckpt.notes_.push_back("tensors from the '" + state_key + "' entry");
  } else {
    for (const auto& key : kStateKeys)
      if (auto candidate = lookup(*root, key); candidate && candidate->kind == Kind::Dict) {
        state = candidate;
        ckpt.notes_.push_back("tensors from the '" + key + "' entry");
        break;
      }
  }
  std::set<std::string> stripped, names;
  int skipped = 0;
  for (const auto& [k, v] : state->entries) {
    if (k->kind != Kind::String || v->kind != Kind::Tensor) {
      ++skipped;
      continue;
    }
    CheckpointTensor t{strip_prefixes(k->text, stripped), v->tensor};
    if (!names.insert(t.name).second) throw Error(where + ": two tensors are named '" + t.name + "' once prefixes are removed");
    ckpt.tensors_.push_back(std::move(t));
  }
  for (const auto& p : stripped) ckpt.notes_.push_back("key prefix '" + p + "' removed");
  if (skipped) ckpt.notes_.push_back(std::to_string(skipped) + " entries that are not tensors skipped");
  if (ckpt.tensors_.empty()) throw Error(where + " holds no tensors (looked in the top level and under model, module, state_dict, ema)");
  return ckpt;
}

const CheckpointTensor* TorchCheckpoint::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<std::uint8_t> TorchCheckpoint::read(const CheckpointTensor& t) const {
  const std::string record = prefix_ + "data/" + t.view.storage.key;
  const ZipEntry* entry = zip_.find(record);
  if (!entry) throw Error("'" + path() + "': tensor '" + t.name + "' refers to record '" + record + "', which is absent");
  const std::size_t elem = dtype_size(t.dtype());
  if (entry->size / elem < t.view.storage.numel)
    throw Error("'" + path() + "': record '" + record + "' holds " + std::to_string(entry->size) + " bytes, fewer than its " +
                std::to_string(t.view.storage.numel) + " elements need");
  const auto numel = static_cast<std::size_t>(t.view.numel());
  std::vector<std::uint8_t> out(numel * elem);
  if (numel == 0) return out;
  // Contiguous views (what state dicts hold) are one read; any other view is gathered element by element.
  std::int64_t expected = 1, last = 0;
  bool contiguous = true;
  for (std::size_t d = t.view.shape.size(); d-- > 0;) {
    if (t.view.shape[d] != 1 && t.view.stride[d] != expected) contiguous = false;
    expected *= t.view.shape[d];
    last += (t.view.shape[d] - 1) * t.view.stride[d];
  }
  const std::uint64_t begin = static_cast<std::uint64_t>(t.view.offset) * elem;
  if (contiguous) {
    zip_.read(*entry, begin, out.data(), out.size());
    return out;
  }
  std::vector<std::uint8_t> span((static_cast<std::size_t>(last) + 1) * elem);
  zip_.read(*entry, begin, span.data(), span.size());
  std::vector<std::int64_t> index(t.view.shape.size(), 0);
  for (std::size_t i = 0; i < numel; ++i) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < index.size(); ++d) src += index[d] * t.view.stride[d];
    std::memcpy(out.data() + i * elem, span.data() + static_cast<std::size_t>(src) * elem, elem);
    for (std::size_t d = index.size(); d-- > 0;) {
      if (++index[d] < t.view.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace speculum
