#include "io/torch_pickle.h"

#include <cstring>
#include <map>
#include <optional>

#include "error.h"

namespace speculum {
namespace {

constexpr std::size_t kMaxMarkDepth = 4096;
constexpr std::size_t kMaxStack = 1u << 24;
constexpr std::size_t kMaxTensorDims = 16;

using Kind = PickleValue::Kind;

// Globals with a fixed meaning; everything else is refused.
enum class GlobalRole { OrderedDict, RebuildTensor, RebuildParameter, StorageType, InertClass };

struct AllowedGlobal {
  GlobalRole role;
  DType dtype = DType::F32;  // StorageType
};

const std::map<std::string, AllowedGlobal>& allowed_globals() {
  static const std::map<std::string, AllowedGlobal> table = {
      {"collections.OrderedDict", {GlobalRole::OrderedDict}},
      {"torch._utils._rebuild_tensor_v2", {GlobalRole::RebuildTensor}},
      {"torch._utils._rebuild_parameter", {GlobalRole::RebuildParameter}},
      {"torch._utils._rebuild_parameter_with_state", {GlobalRole::RebuildParameter}},
      {"torch.FloatStorage", {GlobalRole::StorageType, DType::F32}},
      {"torch.HalfStorage", {GlobalRole::StorageType, DType::F16}},
      {"torch.BFloat16Storage", {GlobalRole::StorageType, DType::BF16}},
      {"torch.DoubleStorage", {GlobalRole::StorageType, DType::F64}},
      {"torch.LongStorage", {GlobalRole::StorageType, DType::I64}},
      {"torch.IntStorage", {GlobalRole::StorageType, DType::I32}},
      {"torch.ShortStorage", {GlobalRole::StorageType, DType::I16}},
      {"torch.CharStorage", {GlobalRole::StorageType, DType::I8}},
      {"torch.ByteStorage", {GlobalRole::StorageType, DType::U8}},
      {"torch.BoolStorage", {GlobalRole::StorageType, DType::Bool}},
      // Data-only objects that training scripts save next to the weights; they stay opaque.
      {"argparse.Namespace", {GlobalRole::InertClass}},
      {"numpy.core.multiarray.scalar", {GlobalRole::InertClass}},
      {"numpy.dtype", {GlobalRole::InertClass}},
      {"torch.torch_version.TorchVersion", {GlobalRole::InertClass}},
  };
  return table;
}

PickleRef make(Kind kind) {
  auto v = std::make_shared<PickleValue>();
  v->kind = kind;
  return v;
}

PickleRef make_int(std::int64_t i) {
  auto v = make(Kind::Int);
  v->integer = i;
  return v;
}

PickleRef make_text(Kind kind, std::string text) {
  auto v = make(kind);
  v->text = std::move(text);
  return v;
}

bool mul_overflows(std::int64_t a, std::int64_t b, std::int64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool add_overflows(std::int64_t a, std::int64_t b, std::int64_t* out) { return __builtin_add_overflow(a, b, out); }

class Machine {
 public:
  Machine(std::string_view bytes, std::string where) : bytes_(bytes), where_(std::move(where)) {}

  PickleRef run() {
    while (true) {
      const std::size_t at = pos_;
      const auto op = static_cast<std::uint8_t>(take(1)[0]);
      switch (op) {
        case 0x80: {  // PROTO
          const auto version = byte();
          if (version > 5) fail(at, "pickle protocol " + std::to_string(version) + " is newer than 5");
          break;
        }
        case 0x95: take(8); break;  // FRAME: a length hint only
        case '.': {                  // STOP
          if (stack_.size() != 1 || !marks_.empty()) fail(at, "STOP with " + std::to_string(stack_.size()) + " values on the stack");
          return stack_.back();
        }
        case '(': mark(at); break;
        case ')': push(make(Kind::Tuple)); break;
        case ']': push(make(Kind::List)); break;
        case '}': push(make(Kind::Dict)); break;
        case 'N': push(make(Kind::None)); break;
        case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
          auto v = make(Kind::Bool);
          v->integer = op == 0x88;
          push(v);
          break;
        }
        case 'K': push(make_int(byte())); break;                              // BININT1
        case 'M': push(make_int(static_cast<std::int64_t>(le(2)))); break;    // BININT2
        case 'J': push(make_int(static_cast<std::int32_t>(le(4)))); break;    // BININT
        case 0x8a: push(make_int(long_bytes(at, byte()))); break;             // LONG1
        case 0x8b: push(make_int(long_bytes(at, le(4)))); break;              // LONG4
        case 'G': {                                                           // BINFLOAT, big-endian
          std::uint64_t bits = 0;
          for (char c : take(8)) bits = (bits << 8) | static_cast<std::uint8_t>(c);
          auto v = make(Kind::Float);
          std::memcpy(&v->real, &bits, 8);
          push(v);
          break;
        }
        case 0x8c: push(make_text(Kind::String, std::string(take(byte()))));  break;  // SHORT_BINUNICODE
        case 'X': push(make_text(Kind::String, std::string(take(le(4))))); break;     // BINUNICODE
        case 0x8d: push(make_text(Kind::String, std::string(take(le(8))))); break;    // BINUNICODE8
        case 'C': push(make_text(Kind::Bytes, std::string(take(byte())))); break;     // SHORT_BINBYTES
        case 'B': push(make_text(Kind::Bytes, std::string(take(le(4))))); break;      // BINBYTES
        case 0x8e: push(make_text(Kind::Bytes, std::string(take(le(8))))); break;     // BINBYTES8
        case 't': {  // TUPLE
          auto v = make(Kind::Tuple);
          v->items = pop_to_mark(at);
          push(v);
          break;
        }
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
          const std::size_t n = op - 0x84u;
          auto v = make(Kind::Tuple);
          v->items = pop_n(at, n);
          push(v);
          break;
        }
        case 'q': memo_put(byte()); break;                                    // BINPUT
        case 'r': memo_put(le(4)); break;                                     // LONG_BINPUT
        case 0x94: memo_put(memo_.size()); break;                             // MEMOIZE
        case 'h': push(memo_get(at, byte())); break;                          // BINGET
        case 'j': push(memo_get(at, le(4))); break;                           // LONG_BINGET
        case 'c': {                                                           // GLOBAL "module\nname\n"
          std::string module = line(at), name = line(at);
          push(global(at, module + "." + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const auto parts = pop_n(at, 2);
          if (parts[0]->kind != Kind::String || parts[1]->kind != Kind::String) fail(at, "STACK_GLOBAL needs two strings");
          push(global(at, parts[0]->text + "." + parts[1]->text));
          break;
        }
        case 'Q': push(persistent_load(at, pop(at))); break;  // BINPERSID
        case 'R': {                                           // REDUCE
          const auto args = pop(at);
          const auto callable = pop(at);
          push(reduce(at, callable, args));
          break;
        }
        case 0x81: {  // NEWOBJ
          const auto args = pop(at);
          const auto cls = pop(at);
          push(construct_inert(at, cls));
          break;
        }
        case 'b': {  // BUILD: set an object's state; a dict's or tensor's attributes carry nothing we use
          pop(at);
          const Kind k = top(at)->kind;
          if (k != Kind::Dict && k != Kind::Opaque && k != Kind::Tensor) fail(at, std::string("BUILD on a ") + kind_name(k));
          break;
        }
        case 's': {  // SETITEM
          auto kv = pop_n(at, 2);
          dict_target(at)->entries.emplace_back(kv[0], kv[1]);
          break;
        }
        case 'u': {  // SETITEMS
          auto items = pop_to_mark(at);
          if (items.size() % 2) fail(at, "SETITEMS with an odd number of values");
          auto d = dict_target(at);
          for (std::size_t i = 0; i < items.size(); i += 2) d->entries.emplace_back(items[i], items[i + 1]);
          break;
        }
        case 'a': {  // APPEND
          auto v = pop(at);
          list_target(at)->items.push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          auto items = pop_to_mark(at);
          auto l = list_target(at);
          l->items.insert(l->items.end(), items.begin(), items.end());
          break;
        }
        case '0': pop(at); break;                 // POP
        case '2': push(top(at)); break;           // DUP
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          fail(at, std::string("refused opcode ") + hex + (op >= 0x20 && op < 0x7f ? std::string(" '") + char(op) + "'" : "") +
                       " (a state dict needs only data opcodes)");
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw Error(where_ + ": byte " + std::to_string(at) + ": " + what);
  }

  std::string_view take(std::uint64_t n) {
    if (n > bytes_.size() - pos_) fail(pos_, "the pickle ends early (wanted " + std::to_string(n) + " more bytes)");
    const std::string_view s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::uint8_t byte() { return static_cast<std::uint8_t>(take(1)[0]); }
  std::uint64_t le(int n) {
    std::uint64_t v = 0;
    const std::string_view s = take(static_cast<std::uint64_t>(n));
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(s[static_cast<std::size_t>(i)]);
    return v;
  }
  std::int64_t long_bytes(std::size_t at, std::uint64_t n) {
    if (n > 8) fail(at, "integer of " + std::to_string(n) + " bytes (at most 8 accepted)");
    if (n == 0) return 0;
    const std::string_view s = take(n);
    std::uint64_t v = 0;
    for (int i = static_cast<int>(n) - 1; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(s[static_cast<std::size_t>(i)]);
    if (n < 8 && (static_cast<std::uint8_t>(s[n - 1]) & 0x80)) v |= ~std::uint64_t{0} << (8 * n);  // sign-extend
    return static_cast<std::int64_t>(v);
  }
  std::string line(std::size_t at) {
    const std::size_t end = bytes_.find('\n', pos_);
    if (end == std::string_view::npos || end - pos_ > 256) fail(at, "GLOBAL name is not a short newline-terminated line");
    std::string s(bytes_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }

  void push(PickleRef v) {
    if (stack_.size() >= kMaxStack) fail(pos_, "stack grows past " + std::to_string(kMaxStack) + " values");
    stack_.push_back(std::move(v));
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  PickleRef pop(std::size_t at) {
    if (stack_.size() <= floor()) fail(at, "pop from an empty stack");
    auto v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  const PickleRef& top(std::size_t at) const {
    if (stack_.size() <= floor()) fail(at, "the stack is empty");
    return stack_.back();
  }
  std::vector<PickleRef> pop_n(std::size_t at, std::size_t n) {
    if (stack_.size() < floor() + n) fail(at, "the stack holds fewer than " + std::to_string(n) + " values");
    std::vector<PickleRef> out(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return out;
  }
  void mark(std::size_t at) {
    if (marks_.size() >= kMaxMarkDepth) fail(at, "MARKs nested deeper than " + std::to_string(kMaxMarkDepth));
    marks_.push_back(stack_.size());
  }
  std::vector<PickleRef> pop_to_mark(std::size_t at) {
    if (marks_.empty()) fail(at, "no MARK to pop to");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<PickleRef> out(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return out;
  }
  PickleRef dict_target(std::size_t at) const {
    const auto& d = top(at);
    if (d->kind != Kind::Dict) fail(at, std::string("SETITEM on a ") + kind_name(d->kind));
    return d;
  }
  PickleRef list_target(std::size_t at) const {
    const auto& l = top(at);
    if (l->kind != Kind::List) fail(at, std::string("APPEND on a ") + kind_name(l->kind));
    return l;
  }
  void memo_put(std::uint64_t index) {
    if (memo_.size() > kMaxStack) fail(pos_, "memo grows past " + std::to_string(kMaxStack) + " entries");
    memo_[index] = top(pos_);
  }
  PickleRef memo_get(std::size_t at, std::uint64_t index) const {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail(at, "memo entry " + std::to_string(index) + " was never stored");
    return it->second;
  }

  PickleRef global(std::size_t at, const std::string& name) {
    if (!allowed_globals().count(name))
      fail(at, "refused global '" + name + "' (a state dict needs only collections.OrderedDict, torch._utils._rebuild_tensor_v2, "
                                          "torch._utils._rebuild_parameter and torch.*Storage)");
    return make_text(Kind::Global, name);
  }
  const AllowedGlobal& role_of(const PickleRef& g) const { return allowed_globals().at(g->text); }

  PickleRef construct_inert(std::size_t at, const PickleRef& cls) {
    if (cls->kind == Kind::Global && role_of(cls).role == GlobalRole::InertClass) return make_text(Kind::Opaque, cls->text);
    if (cls->kind == Kind::Global && role_of(cls).role == GlobalRole::OrderedDict) return make(Kind::Dict);
    fail(at, std::string("cannot construct a ") + (cls->kind == Kind::Global ? cls->text : kind_name(cls->kind)));
  }

  PickleRef persistent_load(std::size_t at, const PickleRef& pid) {
    const auto& t = pid->items;
    if (pid->kind != Kind::Tuple || t.size() != 5 || t[0]->kind != Kind::String || t[0]->text != "storage")
      fail(at, "persistent id is not ('storage', type, key, location, numel)");
    if (t[1]->kind != Kind::Global || role_of(t[1]).role != GlobalRole::StorageType)
      fail(at, "persistent id names no storage type");
    if (t[2]->kind != Kind::String || t[2]->text.empty() || t[2]->text.size() > 64 ||
        t[2]->text.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") != std::string::npos)
      fail(at, "storage key is not a short alphanumeric string");
    if (t[4]->kind != Kind::Int || t[4]->integer < 0) fail(at, "storage size is not a non-negative integer");
    auto v = make(Kind::Storage);
    v->storage = {t[2]->text, role_of(t[1]).dtype, static_cast<std::uint64_t>(t[4]->integer)};
    return v;
  }

  std::vector<std::int64_t> int_tuple(std::size_t at, const PickleRef& v, const char* what) const {
    if (v->kind != Kind::Tuple || v->items.size() > kMaxTensorDims) fail(at, std::string(what) + " is not a tuple of at most 16 integers");
    std::vector<std::int64_t> out;
    for (const auto& i : v->items) {
      if (i->kind != Kind::Int || i->integer < 0) fail(at, std::string(what) + " holds a value that is not a non-negative integer");
      out.push_back(i->integer);
    }
    return out;
  }

  PickleRef rebuild_tensor(std::size_t at, const std::vector<PickleRef>& a) {
    if (a.size() < 4 || a[0]->kind != Kind::Storage || a[1]->kind != Kind::Int || a[1]->integer < 0)
      fail(at, "_rebuild_tensor_v2 arguments are not (storage, offset, size, stride, ...)");
    auto v = make(Kind::Tensor);
    PickledTensor& t = v->tensor;
    t.storage = a[0]->storage;
    t.offset = a[1]->integer;
    t.shape = int_tuple(at, a[2], "tensor size");
    t.stride = int_tuple(at, a[3], "tensor stride");
    if (t.shape.size() != t.stride.size()) fail(at, "tensor size and stride differ in length");
    // The last element the view touches must lie inside the storage.
    std::int64_t last = t.offset, numel = 1;
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      std::int64_t reach = 0;
      if (mul_overflows(numel, t.shape[d], &numel) || (t.shape[d] > 0 && (mul_overflows(t.shape[d] - 1, t.stride[d], &reach) ||
                                                                           add_overflows(last, reach, &last))))
        fail(at, "tensor size overflows");
    }
    if (numel > 0 && static_cast<std::uint64_t>(last) >= t.storage.numel)
      fail(at, "tensor reaches element " + std::to_string(last) + " of storage '" + t.storage.key + "', which has " +
                   std::to_string(t.storage.numel));
    return v;
  }

  PickleRef reduce(std::size_t at, const PickleRef& callable, const PickleRef& args) {
    if (args->kind != Kind::Tuple) fail(at, "REDUCE arguments are not a tuple");
    if (callable->kind == Kind::Opaque) return make_text(Kind::Opaque, callable->text);
    if (callable->kind != Kind::Global) fail(at, std::string("REDUCE calls a ") + kind_name(callable->kind));
    switch (role_of(callable).role) {
      case GlobalRole::OrderedDict:
        if (!args->items.empty()) fail(at, "collections.OrderedDict called with arguments");
        return make(Kind::Dict);
      case GlobalRole::RebuildTensor: return rebuild_tensor(at, args->items);
      case GlobalRole::RebuildParameter:
        if (args->items.empty() || args->items[0]->kind != Kind::Tensor) fail(at, "_rebuild_parameter without a tensor");
        return args->items[0];
      case GlobalRole::InertClass: return make_text(Kind::Opaque, callable->text);
      case GlobalRole::StorageType: break;
    }
    fail(at, "REDUCE calls " + callable->text);
  }

  std::string_view bytes_;
  std::string where_;
  std::size_t pos_ = 0;
  std::vector<PickleRef> stack_;
  std::vector<std::size_t> marks_;
  std::map<std::uint64_t, PickleRef> memo_;
};

}  // namespace

std::int64_t PickledTensor::numel() const {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

const char* kind_name(PickleValue::Kind kind) {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
    case Kind::Opaque: return "opaque object";
  }
  return "?";
}

PickleRef unpickle_state(std::string_view bytes, const std::string& where) { return Machine(bytes, where).run(); }

}  // namespace speculum
