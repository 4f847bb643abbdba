#include "traces/profiler_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/assert.h"
#include "core/error.h"
#include "core/json_depth.h"
#include "core/printable.h"

namespace ppspec::traces {
namespace {

using Json = nlohmann::json;

// A line's fields, each read with its type and range checked, every key known.
class Fields {
 public:
  Fields(const Json& j, const std::string& where, int line) : j_(j), where_(where), line_(line) {}
  [[noreturn]] void fail(const std::string& what) const { throw core::InputError(where_, line_, what); }
  void only(std::initializer_list<const char*> keys) const {
    // Not a structured binding: clang 14 (the fuzz preset's) cannot capture one in a lambda.
    for (const auto& item : j_.items()) {
      const std::string& key = item.key();
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; }))
        fail(fmt::format("unknown key '{}' in a profiler trace line", core::printable(key, 40)));
    }
  }
  int64_t integer(const char* key, int64_t lo, int64_t hi, std::optional<int64_t> otherwise = std::nullopt) const {
    if (!j_.contains(key)) {
      if (otherwise) return *otherwise;
      fail(fmt::format("missing '{}'", key));
    }
    const Json& v = j_.at(key);
    if (!v.is_number_integer()) fail(fmt::format("'{}' must be an integer", key));
    const auto x = v.get<int64_t>();
    if (x < lo || x > hi) fail(fmt::format("'{}' is {}, expected {} to {}", key, x, lo, hi));
    return x;
  }
  std::string text(const char* key, size_t max, bool required = true) const {
    if (!j_.contains(key)) {
      if (required) fail(fmt::format("missing '{}'", key));
      return "";
    }
    if (!j_.at(key).is_string()) fail(fmt::format("'{}' must be a string", key));
    auto s = j_.at(key).get<std::string>();
    if (s.size() > max) fail(fmt::format("'{}' is longer than {} bytes", key, max));
    return s;
  }
  bool has(const char* key) const { return j_.contains(key); }
  bool flag(const char* key) const {
    if (!j_.contains(key)) return false;
    if (!j_.at(key).is_boolean()) fail(fmt::format("'{}' must be true or false", key));
    return j_.at(key).get<bool>();
  }
  uint64_t hash(const char* key) const {
    const std::string h = text(key, 16);
    if (h.size() != 16 || h.find_first_not_of("0123456789abcdef") != std::string::npos)
      fail(fmt::format("'{}' must be 16 lower-case hex digits (a communicator's hash)", key));
    return std::stoull(h, nullptr, 16);
  }

 private:
  const Json& j_;
  const std::string& where_;
  int line_;
};

constexpr int64_t kTimeMax = int64_t{1} << 62;
constexpr int64_t kCountMax = int64_t{1} << 48;

// The fields of a call: op_posted, op_captured.
void read_call(const Fields& f, ProfilerLine& l) {
  f.only({"ev", "t", "comm", "op", "func", "dtype", "count", "peer", "root", "stream", "group", "replay_of", "site"});
  const std::string func = f.text("func", 32);
  l.kind_of_op = func == "other" ? std::nullopt : core::parse_op_kind(func);
  if (func != "other" && !l.kind_of_op)
    f.fail(fmt::format("'func' is '{}': not an operation the plugin names", core::printable(func, 32)));
  const std::string dtype = f.text("dtype", 16);
  // fp8 and NCCL's "Unknown" (uint8 in NCCL 2.28) travel as bytes: ppspec has no fp8 type.
  const auto dt = core::parse_dtype(dtype);
  if (!dt && dtype != "f8e4m3" && dtype != "f8e5m2" && dtype != "unknown")
    f.fail(fmt::format("'dtype' is '{}'", core::printable(dtype, 16)));
  l.dtype = dt.value_or(core::Dtype::u8);
  l.count = f.integer("count", 0, kCountMax);
  const bool p2p = l.kind_of_op && core::is_p2p(*l.kind_of_op);
  if (f.has(p2p ? "root" : "peer")) f.fail(fmt::format("a {} has no '{}'", func, p2p ? "root" : "peer"));
  l.peer = static_cast<int>(f.integer(p2p ? "peer" : "root", 0, 1 << 20, -1));
  l.stream = static_cast<uint32_t>(f.integer("stream", 0, 1 << 20, 0));
  l.group = f.integer("group", 0, int64_t{1} << 40, -1);
  if (f.has("replay_of")) {
    if (l.kind != ProfilerLineKind::op_posted) f.fail("only a replay's op_posted names 'replay_of'");
    l.replay_of = static_cast<uint64_t>(f.integer("replay_of", 0, kTimeMax));
  }
  l.site = f.text("site", 64, false);
}

struct EventName {
  const char* name;
  ProfilerLineKind kind;
};
constexpr EventName kEvents[] = {{"comm_init", ProfilerLineKind::comm_init},
                                 {"op_posted", ProfilerLineKind::op_posted},
                                 {"op_peer", ProfilerLineKind::op_peer},
                                 {"op_captured", ProfilerLineKind::op_captured},
                                 {"op_started", ProfilerLineKind::op_started},
                                 {"op_completed", ProfilerLineKind::op_completed},
                                 {"comm_finalized", ProfilerLineKind::comm_finalized},
                                 {"group_ended", ProfilerLineKind::group_ended},
                                 {"lost", ProfilerLineKind::lost}};

ProfilerLine read_event(const Fields& f) {
  ProfilerLine l;
  const std::string ev = f.text("ev", 32);
  const auto* e =
      std::find_if(std::begin(kEvents), std::end(kEvents), [&](const EventName& n) { return ev == n.name; });
  if (e == std::end(kEvents))
    f.fail(
        fmt::format("'ev' is '{}': expected comm_init, op_posted, op_peer, op_captured, op_started, op_completed, "
                    "comm_finalized, group_ended or lost",
                    core::printable(ev, 32)));
  l.kind = e->kind;
  l.comm = f.hash("comm");
  switch (l.kind) {
    case ProfilerLineKind::lost:
      f.only({"ev", "comm", "records"});
      l.lost = static_cast<uint64_t>(f.integer("records", 0, kTimeMax));
      return l;
    case ProfilerLineKind::comm_init:
      f.only({"ev", "t", "comm", "name", "ranks", "comm_rank", "interface"});
      l.name = f.text("name", 64);
      l.ranks = static_cast<int>(f.integer("ranks", 1, 1 << 20));
      l.comm_rank = static_cast<int>(f.integer("comm_rank", 0, l.ranks - 1));
      l.interface = static_cast<int>(f.integer("interface", 0, 1 << 10, 0));
      break;
    case ProfilerLineKind::comm_finalized: f.only({"ev", "t", "comm"}); break;
    case ProfilerLineKind::group_ended:
      f.only({"ev", "t", "comm", "group"});
      l.group = f.integer("group", 0, int64_t{1} << 40);
      break;
    case ProfilerLineKind::op_posted:
    case ProfilerLineKind::op_captured: read_call(f, l); break;
    case ProfilerLineKind::op_peer:
      f.only({"ev", "t", "comm", "op", "peer"});
      l.peer = static_cast<int>(f.integer("peer", 0, 1 << 20));
      break;
    default: f.only({"ev", "t", "comm", "op"}); break;
  }
  l.t = f.integer("t", 0, kTimeMax);
  if (l.kind != ProfilerLineKind::comm_init && l.kind != ProfilerLineKind::comm_finalized &&
      l.kind != ProfilerLineKind::group_ended)
    l.op = static_cast<uint64_t>(f.integer("op", 0, kTimeMax));
  return l;
}

}  // namespace

ProfilerLine parse_profiler_line(const std::string& text, const std::string& where, int line) {
  // A line is one flat object (a site's frames at most one level more).
  if (core::json_too_deep(text, 3))
    throw core::InputError(where, line, "nested too deeply for a line of an NCCL profiler trace");
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception&) {
    throw core::InputError(where, line, "not a JSON object (a line of an NCCL profiler trace)");
  }
  if (!j.is_object()) throw core::InputError(where, line, "not a JSON object (a line of an NCCL profiler trace)");
  const Fields f(j, where, line);
  ProfilerLine l;
  for (const char* key : {"ppspec_nccl_profiler", "ppspec_nccl_profiler_end"}) {
    if (!j.contains(key)) continue;
    const int64_t version = f.integer(key, 0, 1 << 20);
    if (version != kProfilerTraceVersion)
      f.fail(fmt::format(
          "written by version {} of ppspec's NCCL profiler plugin; this ppspec reads version {} (use the ppspec "
          "that came with the plugin)",
          version, kProfilerTraceVersion));
    if (std::string(key) == "ppspec_nccl_profiler_end") {
      f.only({"ppspec_nccl_profiler_end", "disabled"});
      l.kind = ProfilerLineKind::trailer;
      l.disabled = f.flag("disabled");
      return l;
    }
    f.only({"ppspec_nccl_profiler", "rank", "host", "pid", "clock", "completions"});
    l.completions = !f.has("completions") || f.flag("completions");
    l.kind = ProfilerLineKind::header;
    l.rank = static_cast<int>(f.integer("rank", -1, 1 << 20));
    l.host = f.text("host", 128);
    l.pid = f.integer("pid", 0, int64_t{1} << 40);
    const std::string clock = f.text("clock", 16);
    if (clock != "realtime" && clock != "harness") f.fail("'clock' must be \"realtime\" or \"harness\"");
    l.harness_clock = clock == "harness";
    return l;
  }
  return read_event(f);
}

bool is_profiler_trace(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first)) return false;
  return first.starts_with("{\"ppspec_nccl_profiler\":");
}

}  // namespace ppspec::traces
