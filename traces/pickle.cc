#include "traces/pickle.h"

#include <cstring>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <vector>

#include "core/error.h"

namespace ppspec::traces {
namespace {

using Json = nlohmann::json;
using Node = std::shared_ptr<Json>;  // containers are filled in place, as the memo refers to them

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const std::string& file) : b_(bytes), file_(file) {}

  Json run() {
    while (pos_ < b_.size()) {
      const auto op = static_cast<unsigned char>(b_[pos_++]);
      if (op == '.') {  // STOP
        if (stack_.size() != 1 || !marks_.empty()) fail("STOP with a malformed stack");
        return *stack_.back();
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
  uint64_t uint(size_t n) {
    const std::string_view s = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(s[i])) << (8 * i);
    return v;
  }
  void push(Json v) {
    if (stack_.size() >= kPickleStackMax) fail("too many values");
    stack_.push_back(std::make_shared<Json>(std::move(v)));
  }
  Node pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("pop from an empty stack");
    Node n = stack_.back();
    stack_.pop_back();
    return n;
  }
  // The values since the last MARK, removed from the stack.
  std::vector<Node> since_mark() {
    if (marks_.empty()) fail("no MARK");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Node> v(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return v;
  }
  Node back(const char* what) {
    if (stack_.empty()) fail(fmt::format("{} on an empty stack", what));
    return stack_.back();
  }
  Json& top(Json::value_t type, const char* what) {
    if (stack_.empty() || stack_.back()->type() != type) fail(fmt::format("{} on something else", what));
    return *stack_.back();
  }
  void set_items(std::vector<Node> kv) {
    if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of values");
    Json& d = top(Json::value_t::object, "SETITEMS");
    for (size_t i = 0; i < kv.size(); i += 2) {
      if (!kv[i]->is_string()) fail("a dict key that is not a string");
      d[kv[i]->get<std::string>()] = *kv[i + 1];
    }
  }
  void tuple(size_t n) {
    if (stack_.size() < n) fail("TUPLE of missing values");
    Json t = Json::array();
    for (size_t i = stack_.size() - n; i < stack_.size(); ++i) t.push_back(*stack_[i]);
    stack_.resize(stack_.size() - n);
    push(std::move(t));
  }
  void step(unsigned char op);
  void step_number(unsigned char op);
  void step_memo(unsigned char op);

  std::string_view b_;
  const std::string& file_;
  size_t pos_ = 0;
  std::vector<Node> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Node> memo_;
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
    case 'q': {
      const uint64_t id = uint(1);
      memo_[id] = back("BINPUT");
      return;
    }
    case 'r': {
      const uint64_t id = uint(4);
      memo_[id] = back("LONG_BINPUT");
      return;
    }
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
      return push(*it->second);
    }
    default: step_number(op);
  }
}

void Unpickler::step(unsigned char op) {
  switch (op) {
    case 0x80: uint(1); return;    // PROTO
    case 0x95: uint(8); return;    // FRAME: a length hint
    case '}': push(Json::object()); return;
    case ']': push(Json::array()); return;
    case ')': push(Json::array()); return;
    case 'N': push(nullptr); return;
    case 0x88: push(true); return;
    case 0x89: push(false); return;
    case '(':
      if (marks_.size() >= kPickleDepthMax) fail("nested too deeply");
      marks_.push_back(stack_.size());
      return;
    case 'X': push(std::string(take(uint(4)))); return;     // BINUNICODE
    case 0x8c: push(std::string(take(uint(1)))); return;    // SHORT_BINUNICODE
    case 0x8d: push(std::string(take(uint(8)))); return;    // BINUNICODE8
    case 's': {                                             // SETITEM
      Node v = pop();
      Node k = pop();
      set_items({k, v});
      return;
    }
    case 'u': set_items(since_mark()); return;              // SETITEMS
    case 'a': {                                             // APPEND
      Node v = pop();
      top(Json::value_t::array, "APPEND").push_back(*v);
      return;
    }
    case 'e': {                                             // APPENDS
      std::vector<Node> items = since_mark();
      Json& l = top(Json::value_t::array, "APPENDS");
      for (const Node& n : items) l.push_back(*n);
      return;
    }
    case 't': {                                             // TUPLE
      std::vector<Node> items = since_mark();
      Json t = Json::array();
      for (const Node& n : items) t.push_back(*n);
      push(std::move(t));
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
