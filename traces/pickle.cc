#include "traces/pickle.h"

#include <cstring>
#include <fmt/format.h>
#include <map>
#include <vector>

#include "core/utf8.h"
#include "core/error.h"

namespace ppspec::traces {
namespace {

using Json = nlohmann::json;

// The values a pickle builds, in an arena: containers hold the indices of their items, so that an
// APPEND or a memo reference costs O(1) however large the value (a value shared through the memo
// is materialised once per use only at the end, within kPickleValuesMax). Indices, not pointers:
// a container that holds itself is a cycle the conversion's depth bound stops, never a leak.
struct Value {
  enum class Kind : uint8_t { scalar, list, dict } kind = Kind::scalar;
  Json scalar;
  std::vector<uint32_t> items;                            // list, tuple
  std::vector<std::pair<std::string, uint32_t>> entries;  // dict, in insertion order; later keys win
};

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const std::string& file) : b_(bytes), file_(file) {}

  Json run() {
    while (pos_ < b_.size()) {
      const auto op = static_cast<unsigned char>(b_[pos_++]);
      if (op == '.') {  // STOP
        if (stack_.size() != 1 || !marks_.empty()) fail("STOP with a malformed stack");
        Budget budget{kPickleValuesMax, kPickleBytesMax};
        return materialise(stack_.back(), 0, budget);
      }
      step(op);
    }
    fail("the pickle ends without STOP: a truncated dump");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw core::InputError(file_, 0, fmt::format("pickle byte {}: {}", pos_, what));
  }
  std::string_view take(size_t n) {
    if (b_.size() - pos_ < n) fail("truncated");
    const std::string_view s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  // A unicode opcode's string, just taken: Python decodes it as UTF-8 and refuses a pickle whose
  // string is not (so does every JSON and TOML this value may travel into).
  std::string text(std::string_view s) const {
    if (const size_t at = core::invalid_utf8_at(s); at != std::string_view::npos)
      throw core::InputError(
          file_, 0,
          fmt::format("pickle byte {}: a string that is not UTF-8 (its byte {} is 0x{:02x}); Python's "
                      "pickle cannot load it either",
                      pos_ - s.size() + at, at, static_cast<unsigned char>(s[at])));
    return std::string(s);
  }
  uint64_t uint(size_t n) {
    const std::string_view s = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(s[i])) << (8 * i);
    return v;
  }
  uint32_t make(Value v) {
    if (arena_.size() >= kPickleStackMax) fail("too many values");
    arena_.push_back(std::move(v));
    return static_cast<uint32_t>(arena_.size() - 1);
  }
  void push_index(uint32_t i) {
    if (stack_.size() >= kPickleStackMax) fail("too many values on the stack");
    stack_.push_back(i);
  }
  void push(Json scalar) { push_index(make(Value{Value::Kind::scalar, std::move(scalar), {}, {}})); }
  void push_container(Value::Kind k) { push_index(make(Value{k, nullptr, {}, {}})); }
  // The values above the last MARK (or the whole stack without one) that an opcode may take.
  size_t available() const { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }
  uint32_t pop() {
    if (available() == 0) fail("pop from an empty stack (or below its MARK)");
    const uint32_t n = stack_.back();
    stack_.pop_back();
    return n;
  }
  // The values since the last MARK, removed from the stack.
  std::vector<uint32_t> since_mark() {
    if (marks_.empty()) fail("no MARK");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> v(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return v;
  }
  uint32_t back(const char* what) const {
    if (stack_.empty()) fail(fmt::format("{} on an empty stack", what));
    return stack_.back();
  }
  Value& top(Value::Kind kind, const char* what) {
    if (available() == 0 || arena_[stack_.back()].kind != kind) fail(fmt::format("{} on something else", what));
    return arena_[stack_.back()];
  }
  void set_items(const std::vector<uint32_t>& kv) {
    if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of values");
    Value& d = top(Value::Kind::dict, "SETITEMS");
    for (size_t i = 0; i < kv.size(); i += 2) {
      const Value& key = arena_[kv[i]];
      if (key.kind != Value::Kind::scalar || !key.scalar.is_string()) fail("a dict key that is not a string");
      d.entries.emplace_back(key.scalar.get<std::string>(), kv[i + 1]);
    }
  }
  void tuple(size_t n) {
    if (available() < n) fail(fmt::format("TUPLE{} of missing values (or of values below the MARK)", n));
    Value t{Value::Kind::list, nullptr, {}, {}};
    t.items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    push_index(make(std::move(t)));
  }
  struct Budget {
    size_t values;
    size_t bytes;
  };
  // The JSON value of node `i`, nested at most kPickleDepthMax deep, within `budget`.
  Json materialise(uint32_t i, size_t depth, Budget& budget) const {
    if (depth > kPickleDepthMax)
      fail(fmt::format("values nested more than {} deep (or a container that holds itself)", kPickleDepthMax));
    const Value& v = arena_[i];
    const size_t bytes =
        v.kind == Value::Kind::scalar && v.scalar.is_string() ? v.scalar.get_ref<const std::string&>().size() : 0;
    if (budget.values == 0 || budget.bytes < bytes)
      fail(fmt::format("more than {} values or {} bytes of text once memo references are expanded", kPickleValuesMax,
                       kPickleBytesMax));
    --budget.values;
    budget.bytes -= bytes;
    if (v.kind == Value::Kind::scalar) return v.scalar;
    if (v.kind == Value::Kind::list) {
      Json out = Json::array();
      for (uint32_t item : v.items) out.push_back(materialise(item, depth + 1, budget));
      return out;
    }
    Json out = Json::object();
    for (const auto& [key, item] : v.entries) out[key] = materialise(item, depth + 1, budget);
    return out;
  }
  void step(unsigned char op);
  void step_number(unsigned char op);
  void step_memo(unsigned char op);

  std::string_view b_;
  const std::string& file_;
  size_t pos_ = 0;
  std::vector<Value> arena_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, uint32_t> memo_;
};

void Unpickler::step_number(unsigned char op) {
  switch (op) {
    case 'J': push(static_cast<int32_t>(uint(4))); return;  // BININT
    case 'K': push(uint(1)); return;                        // BININT1
    case 'M': push(uint(2)); return;                        // BININT2
    case 0x8a: {                                            // LONG1: little-endian two's complement
      const size_t n = uint(1);
      if (n > 8) fail("an integer wider than 64 bits");
      if (n == 0) return push(0);
      uint64_t v = uint(n);
      if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
      return push(static_cast<int64_t>(v));
    }
    case 'G': {  // BINFLOAT, big-endian
      const std::string_view s = take(8);
      uint64_t bits = 0;
      for (char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);
      double d = 0;
      std::memcpy(&d, &bits, sizeof d);
      return push(d);
    }
    default: fail(fmt::format("opcode {:#04x} is not a plain object's", op));
  }
}

void Unpickler::step_memo(unsigned char op) {
  switch (op) {
    case 'q': memo_[uint(1)] = back("BINPUT"); return;
    case 'r': memo_[uint(4)] = back("LONG_BINPUT"); return;
    case 0x94: {
      const uint64_t id = memo_.size();
      memo_[id] = back("MEMOIZE");
      return;
    }
    case 'h':
    case 'j': {
      const uint64_t id = uint(op == 'h' ? 1 : 4);
      const auto it = memo_.find(id);
      if (it == memo_.end()) fail(fmt::format("memo {} was never stored", id));
      return push_index(it->second);
    }
    default: step_number(op);
  }
}

void Unpickler::step(unsigned char op) {
  switch (op) {
    case 0x80: uint(1); return;  // PROTO
    case 0x95: uint(8); return;  // FRAME: a length hint
    case '}': push_container(Value::Kind::dict); return;
    case ']': push_container(Value::Kind::list); return;
    case ')': push_container(Value::Kind::list); return;
    case 'N': push(nullptr); return;
    case 0x88: push(true); return;
    case 0x89: push(false); return;
    case '(':
      if (marks_.size() >= kPickleDepthMax) fail("nested too deeply");
      marks_.push_back(stack_.size());
      return;
    case 'X': push(text(take(uint(4)))); return;   // BINUNICODE
    case 0x8c: push(text(take(uint(1)))); return;  // SHORT_BINUNICODE
    case 0x8d: push(text(take(uint(8)))); return;  // BINUNICODE8
    case 's': {                                    // SETITEM
      const uint32_t v = pop();
      const uint32_t k = pop();
      set_items({k, v});
      return;
    }
    case 'u': set_items(since_mark()); return;  // SETITEMS
    case 'a': {                                 // APPEND
      const uint32_t v = pop();
      top(Value::Kind::list, "APPEND").items.push_back(v);
      return;
    }
    case 'e': {  // APPENDS
      const std::vector<uint32_t> items = since_mark();
      Value& l = top(Value::Kind::list, "APPENDS");
      l.items.insert(l.items.end(), items.begin(), items.end());
      return;
    }
    case 't': {  // TUPLE
      Value t{Value::Kind::list, nullptr, since_mark(), {}};
      push_index(make(std::move(t)));
      return;
    }
    case 0x85: tuple(1); return;
    case 0x86: tuple(2); return;
    case 0x87: tuple(3); return;
    default: step_memo(op);
  }
}

}  // namespace

nlohmann::json unpickle(std::string_view bytes, const std::string& file) { return Unpickler(bytes, file).run(); }

}  // namespace ppspec::traces
