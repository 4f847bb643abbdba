#include "scenario/program_loader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <sstream>

#include "core/file_bytes.h"
#include "core/hash.h"
#include "core/finding_kinds.h"
#include "core/hazard_kinds.h"
#include "core/printable.h"
#include "scenario/toml_reader.h"

namespace ppspec::scenario {
namespace {

using program::OpType;
using program::Program;
using program::ProgramOp;

constexpr std::string_view kProgramTopKeys =
    "kind, name, description, ranks, streams, runtime, communicator, rank, explore, expect";
constexpr std::string_view kRuntimeKeys =
    "module_loading, concurrency, on_mismatch, strict, runtime_connect, eager_bytes, unit_bytes, max_steps, "
    "max_time_ms, jitter, hang_timeout_s, memory_budget_mb, race_detection, delay_stream, stream_delay_us, cost";
constexpr std::string_view kCostKeys =
    "host_call_us, kernel_us, kernel_per_kwork_us, comm_latency_us, comm_gbps, module_load_us, jit_compile_us, "
    "comm_init_us, connect_us, memcpy_us";

// Which keys each operation takes (besides `op`).
std::string_view op_keys(OpType t) {
  switch (t) {
    case OpType::send: return "comm, peer, dst, dtype, count, stream, label, step";
    case OpType::recv: return "comm, peer, src, dtype, count, stream, label, step";
    case OpType::broadcast: return "comm, root, src, dtype, count, stream, label, step";
    case OpType::all_reduce:
    case OpType::all_gather:
    case OpType::all_to_all: return "comm, dtype, count, stream, label, step";
    case OpType::group_start:
    case OpType::group_end:
    case OpType::device_sync: return "";
    case OpType::launch: return "kernel, spec, stream, duration_us";
    case OpType::preload: return "kernel, spec";
    case OpType::record:
    case OpType::wait_event: return "event, stream";
    case OpType::event_sync: return "event";
    case OpType::stream_sync: return "stream";
    case OpType::malloc: return "bytes";
    case OpType::sleep: return "us";
    case OpType::capture_begin: return "stream";
    case OpType::capture_end: return "stream, graph";
    case OpType::graph_launch: return "graph, stream";
    case OpType::wait_flag:
    case OpType::set_flag: return "flag, stream";
  }
  return "";
}

// All the keys an operation takes, `op` first, for TableReader::only and finish.
std::string known_op_keys(OpType t) {
  const std::string_view keys = op_keys(t);
  return keys.empty() ? std::string("op") : fmt::format("op, {}", keys);
}

core::Time us_to_time(double us) { return static_cast<core::Time>(std::llround(us * static_cast<double>(core::kUs))); }

struct Context {
  const std::string& file;
  Program& p;
};

const program::CommDecl* find_comm(const Program& p, std::string_view name) {
  for (const auto& c : p.comms)
    if (c.name == name) return &c;
  return nullptr;
}

bool member(const program::CommDecl& c, core::RankId r) {
  return std::find(c.ranks.begin(), c.ranks.end(), r) != c.ranks.end();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

// The operation's stream: one of the declared streams; without the key, the first declared one
// unless the operation must name its stream.
void read_op_stream(TableReader& r, const Program& p, ProgramOp& op, bool required) {
  auto s = r.string("stream");
  if (!s) {
    if (required)
      r.fail_here(fmt::format("'{}' needs a 'stream' (one of: {})", program::to_string(op.type), join(p.streams)));
    op.stream = p.streams.front();
    return;
  }
  if (std::find(p.streams.begin(), p.streams.end(), *s) == p.streams.end())
    r.fail("stream", fmt::format("unknown stream '{}' (declared: {})", *s, join(p.streams)));
  op.stream = *s;
}

// A name the operation cannot go without: its kernel, event, flag or graph (`article` for the message).
std::string read_required_name(TableReader& r, OpType type, const char* key, const char* article) {
  auto name = r.string(key);
  if (!name || name->empty())
    r.fail_here(fmt::format("'{}' needs {} '{}' name", program::to_string(type), article, key));
  return *name;
}

// send, recv, broadcast, all_reduce, all_gather, all_to_all: a communicator `rank` belongs to, the peer or
// root (a member too) for the ones that have one, and what is moved.
void read_comm_op(TableReader& r, const Program& p, core::RankId rank, ProgramOp& op) {
  auto comm = r.string("comm");
  if (!comm) r.fail_here(fmt::format("'{}' needs a 'comm'", program::to_string(op.type)));
  const program::CommDecl* c = find_comm(p, *comm);
  if (c == nullptr) {
    std::vector<std::string> names;
    for (const auto& d : p.comms) names.push_back(d.name);
    r.fail("comm", fmt::format("unknown communicator '{}' (declared: {})", *comm, join(names)));
  }
  if (!member(*c, rank)) r.fail("comm", fmt::format("rank {} is not a member of communicator '{}'", rank, *comm));
  op.comm = *comm;
  if (op.type == OpType::send || op.type == OpType::recv || op.type == OpType::broadcast) {
    // torch's names are aliases: dst (a send's peer), src (a receive's peer, a broadcast's root).
    const char* own = op.type == OpType::broadcast ? "root" : "peer";
    const char* torch = op.type == OpType::send ? "dst" : "src";
    if (r.has(own) && r.has(torch))
      r.fail(torch, fmt::format("'{}' and '{}' name the same rank: give one", own, torch));
    const char* key = r.has(torch) ? torch : own;
    auto peer = r.integer(key, 0, p.num_ranks - 1);
    if (!peer) r.fail_here(fmt::format("'{}' needs a '{}' (a global rank)", program::to_string(op.type), key));
    op.peer = static_cast<core::RankId>(*peer);
    if (!member(*c, op.peer)) r.fail(key, fmt::format("rank {} is not a member of communicator '{}'", op.peer, *comm));
  }
  op.dtype = r.choice<core::Dtype>("dtype", core::parse_dtype_or_torch, core::dtype_names_with_torch())
                 .value_or(core::Dtype::f32);
  op.count = r.integer("count", 0, int64_t{1} << 32).value_or(1);
  op.label = r.string_or("label", "");
  op.step = r.integer("step", 0, int64_t{1} << 40).value_or(-1);
  read_op_stream(r, p, op, false);
}

// The operations that are no communication: kernels, events, synchronisation, memory, sleeps,
// graph captures and flags (group_start, group_end and device_sync take no keys).
void read_local_op(TableReader& r, const Program& p, ProgramOp& op) {
  switch (op.type) {
    case OpType::launch:
    case OpType::preload:
      op.kernel = read_required_name(r, op.type, "kernel", "a");
      op.spec = r.string_or("spec", "");
      if (op.type == OpType::launch) {
        read_op_stream(r, p, op, false);
        if (auto d = r.number("duration_us", 0, 1e9)) op.duration = us_to_time(*d);
      }
      break;
    case OpType::record:
    case OpType::wait_event:
    case OpType::event_sync:
      op.event = read_required_name(r, op.type, "event", "an");
      if (op.type != OpType::event_sync) read_op_stream(r, p, op, true);
      break;
    case OpType::stream_sync:
    case OpType::capture_begin: read_op_stream(r, p, op, true); break;
    case OpType::malloc: {
      auto b = r.integer("bytes", 0, int64_t{1} << 40);
      if (!b) r.fail_here("'malloc' needs 'bytes'");
      op.count = *b;
      break;
    }
    case OpType::sleep: {
      auto us = r.number("us", 0, 1e12);
      if (!us) r.fail_here("'sleep' needs 'us' (microseconds)");
      op.duration = us_to_time(*us);
      break;
    }
    case OpType::wait_flag:
    case OpType::set_flag:
      read_op_stream(r, p, op, true);
      op.flag = read_required_name(r, op.type, "flag", "a");
      break;
    case OpType::capture_end:
    case OpType::graph_launch:
      read_op_stream(r, p, op, true);
      op.graph = read_required_name(r, op.type, "graph", "a");
      break;
    default: break;
  }
}

ProgramOp read_op(Context& ctx, const toml::table& t, core::RankId rank, const std::string& where) {
  TableReader r(t, ctx.file, where);
  ProgramOp op;
  if (auto name = t.get("op"); name != nullptr && name->is_string()) {
    if (auto type = program::parse_op_type(name->as_string()->get())) {
      r.only(known_op_keys(*type));
    }
  }
  op.origin = fmt::format("{}:{}", std::filesystem::path(ctx.file).filename().string(), r.line());
  const auto type = r.choice<OpType>("op", program::parse_op_type, program::op_type_names());
  if (!type) r.fail_here(fmt::format("missing key 'op' (one of: {})", program::op_type_names()));
  op.type = *type;
  if (program::is_comm_op(op.type))
    read_comm_op(r, ctx.p, rank, op);
  else
    read_local_op(r, ctx.p, op);
  r.finish(known_op_keys(op.type));
  return op;
}

int line_of_op(const ProgramOp& op, int fallback) {
  const auto colon = op.origin.rfind(':');
  return colon == std::string::npos ? fallback : std::stoi(op.origin.substr(colon + 1));
}

// The calls CUDA's default (global) capture mode rejects during a capture, invalidating it.
bool capture_unsafe(OpType t) {
  return t == OpType::stream_sync || t == OpType::device_sync || t == OpType::malloc || t == OpType::event_sync;
}

// Checks that need the whole thread: balanced groups and captures, no group across a capture
// boundary, no capture-unsafe call inside a capture, known events and graphs.
void check_thread(const std::string& file, const program::ThreadProgram& tp, core::RankId rank,
                  const std::set<std::string>& recorded_events, int line) {
  int group = 0;
  std::map<std::string, bool> capturing;  // stream -> capturing
  int captures = 0;                       // streams this thread is capturing now
  std::set<std::string> graphs;
  auto fail = [&](const ProgramOp& op, const std::string& msg) {
    throw core::InputError(file, line_of_op(op, line), fmt::format("rank {} thread '{}': {}", rank, tp.name, msg));
  };
  for (const ProgramOp& op : tp.ops) {
    if (captures > 0 && capture_unsafe(op.type))
      fail(op, fmt::format("'{}' inside a graph capture: CUDA rejects it and invalidates the capture "
                           "(cudaErrorStreamCaptureUnsupported)",
                           program::to_string(op.type)));
    switch (op.type) {
      case OpType::group_start: ++group; break;
      case OpType::group_end:
        if (--group < 0) fail(op, "group_end without a matching group_start");
        break;
      case OpType::capture_begin:
      case OpType::capture_end: {
        if (group > 0)
          fail(op, fmt::format("'{}' inside a group: the group would span the capture boundary, and NCCL decides at "
                               "group_end whether the group's operations are captured; end the group on the same side",
                               program::to_string(op.type)));
        const bool begin = op.type == OpType::capture_begin;
        if (begin && capturing[op.stream]) fail(op, fmt::format("stream '{}' is already capturing", op.stream));
        if (!begin && !capturing[op.stream])
          fail(op, fmt::format("capture_end on stream '{}', which is not capturing", op.stream));
        if (!begin && graphs.count(op.graph) > 0) fail(op, fmt::format("graph '{}' is captured twice", op.graph));
        capturing[op.stream] = begin;
        captures += begin ? 1 : -1;
        if (!begin) graphs.insert(op.graph);
        break;
      }
      case OpType::graph_launch:
        if (!graphs.count(op.graph))
          fail(op, fmt::format("graph '{}' is launched before any capture_end names it", op.graph));
        if (capturing[op.stream])
          fail(op, fmt::format("graph_launch into stream '{}' while it is capturing: CUDA rejects it (\"operation not "
                               "permitted when stream is capturing\", measured on H200 with CUDA 13.0)",
                               op.stream));
        break;
      case OpType::wait_event:
      case OpType::event_sync:
        if (!recorded_events.count(op.event))
          fail(op, fmt::format("event '{}' is never recorded on rank {}", op.event, rank));
        break;
      case OpType::record:
        if (capturing[op.stream]) fail(op, "recording events inside a graph capture is not simulated");
        break;
      case OpType::stream_sync:
      case OpType::device_sync:
      case OpType::malloc:
        if (group > 0)
          fail(op, fmt::format("'{}' inside a group: NCCL allows no synchronisation before group_end",
                               program::to_string(op.type)));
        break;
      default: break;
    }
  }
  if (group != 0)
    throw core::InputError(file, line,
                           fmt::format("rank {} thread '{}': group_start without group_end", rank, tp.name));
  for (const auto& [s, on] : capturing)
    if (on)
      throw core::InputError(file, line,
                             fmt::format("rank {} thread '{}': stream '{}' never ends its capture", rank, tp.name, s));
}

// Captures across the threads of one rank. A stream one thread captures is that thread's alone:
// CUDA rejects a second capture_begin on it (cudaErrorIllegalState), and work another thread
// issues to it joins the capture or fails depending on when it comes, which the simulator does not
// model. Graph names are the rank's, so each names one capture.
void check_rank_captures(const std::string& file, const std::vector<program::ThreadProgram>& threads, core::RankId rank,
                         int line) {
  std::map<std::string, size_t> capturer;  // stream -> the thread that captures it
  std::map<std::string, size_t> graph_owner;
  for (size_t t = 0; t < threads.size(); ++t)
    for (const ProgramOp& op : threads[t].ops) {
      auto fail = [&](const std::string& msg) {
        throw core::InputError(file, line_of_op(op, line),
                               fmt::format("rank {} thread '{}': {}", rank, threads[t].name, msg));
      };
      if (op.type == OpType::capture_begin) {
        const auto [it, fresh] = capturer.emplace(op.stream, t);
        if (!fresh && it->second != t)
          fail(
              fmt::format("thread '{}' captures stream '{}' too: CUDA rejects a capture_begin on a stream that is "
                          "already capturing, and which thread gets there first depends on the schedule",
                          threads[it->second].name, op.stream));
      }
      if (op.type == OpType::capture_end) {
        const auto [it, fresh] = graph_owner.emplace(op.graph, t);
        if (!fresh && it->second != t)
          fail(fmt::format("graph '{}' is captured by thread '{}' too", op.graph, threads[it->second].name));
      }
    }
  for (size_t t = 0; t < threads.size(); ++t)
    for (const ProgramOp& op : threads[t].ops) {
      const auto it = op.stream.empty() ? capturer.end() : capturer.find(op.stream);
      if (it == capturer.end() || it->second == t) continue;
      throw core::InputError(
          file, line_of_op(op, line),
          fmt::format("rank {} thread '{}': '{}' on stream '{}', which thread '{}' captures: work "
                      "from another thread joins the capture or runs eagerly depending on when "
                      "it comes (not simulated); issue it from the capturing thread",
                      rank, threads[t].name, program::to_string(op.type), op.stream, threads[it->second].name));
    }
}

program::ThreadProgram read_thread(Context& ctx, const toml::table& t, core::RankId rank, const std::string& where,
                                   std::string name) {
  TableReader r(t, ctx.file, where);
  program::ThreadProgram tp;
  tp.name = std::move(name);
  tp.repeat = r.integer("repeat", 1, int64_t{1} << 32).value_or(1);
  const toml::array* ops = r.array("ops");
  if (ops == nullptr) r.fail_here("missing 'ops' (an array of operations)");
  for (size_t i = 0; i < ops->size(); ++i) {
    const toml::node& n = *ops->get(i);
    if (!n.is_table())
      throw core::InputError(
          ctx.file, line_of(n),
          fmt::format("{} ops[{}]: expected an inline table {{ op = ... }}, found {}", where, i, type_name(n)));
    tp.ops.push_back(read_op(ctx, *n.as_table(), rank, fmt::format("{} ops[{}]", where, i)));
  }
  r.finish("ops, repeat");
  return tp;
}

}  // namespace

namespace {

// toml++ builds and frees dotted keys recursively: a header of 50,000 components overflows the
// stack. No scenario needs more than a few levels, so deeper keys are refused before parsing.
constexpr int kKeyDepthMax = 16;

void check_key_depth(std::string_view text, const std::string& file) {
  // Counts the dots of each run of bare-key characters outside strings: a dotted key, a header,
  // or a key inside an inline table (a number has at most one dot).
  int line = 1;
  int dots = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (quote != 0) {
      if (c == '\\' && quote == '"')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      dots = 0;
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '.') {
      if (++dots >= kKeyDepthMax)
        throw core::InputError(file, line, fmt::format("a dotted key of more than {} parts", kKeyDepthMax));
    } else if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != ' ' && c != '\t') {
      dots = 0;
    }
  }
}

// A host thread is named rank<N>.<thread> in reports, as a stream is rank<N>.<stream>: the two
// must not collide, and the name must print on one line.
void check_thread_name(const std::string& file, const Program& p, std::string_view name, int line,
                       const std::string& where) {
  const bool printable =
      !name.empty() && name.size() <= kNameBytesMax &&
      std::all_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; });
  if (!printable)
    throw core::InputError(file, line,
                           fmt::format("{}.thread.'{}': a thread name is 1..{} printable characters", where,
                                       core::printable(name, 60), kNameBytesMax));
  if (std::find(p.streams.begin(), p.streams.end(), name) != p.streams.end())
    throw core::InputError(file, line,
                           fmt::format("{}.thread.{}: a thread may not have a stream's name (reports call both "
                                       "rank<N>.{})",
                                       where, name, name));
}

}  // namespace

toml::table parse_toml_text(std::string_view text, const std::string& file) {
  check_key_depth(text, file);
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw core::InputError(file, static_cast<int>(e.source().begin.line),
                           fmt::format("TOML syntax: {}", e.description()));
  }
}

toml::table parse_toml_file(const std::string& path, uint64_t* content_hash) {
  const std::string text = core::file_bytes_or_throw(path);
  if (content_hash != nullptr) *content_hash = core::fnv1a_bytes(text.data(), text.size());
  return parse_toml_text(text, path);
}

core::ScenarioKind scenario_kind(const toml::table& root, const std::string& file) {
  const toml::node* k = root.get("kind");
  if (k == nullptr) throw core::InputError(file, 1, "missing top-level key 'kind' (\"program\" or \"serving\")");
  if (!k->is_string())
    throw core::InputError(file, line_of(*k),
                           fmt::format("'kind': expected \"program\" or \"serving\", found {}", type_name(*k)));
  const std::string& kind = k->as_string()->get();
  const std::optional<core::ScenarioKind> parsed = core::parse_scenario_kind(kind);
  if (!parsed)
    throw core::InputError(
        file, line_of(*k),
        fmt::format("kind \"{}\" is not supported (expected \"program\" or \"serving\")", core::printable(kind, 60)));
  return *parsed;
}

void read_runtime(TableReader& r, core::WorldConfig& cfg, core::Time* hang_timeout) {
  cfg.module_loading = r.choice<core::ModuleLoading>("module_loading", core::parse_module_loading, "eager, lazy, jit")
                           .value_or(cfg.module_loading);
  cfg.concurrency =
      r.choice<core::Concurrency>("concurrency", core::parse_concurrency, "ok, serial").value_or(cfg.concurrency);
  cfg.on_mismatch =
      r.choice<core::OnMismatch>("on_mismatch", core::parse_on_mismatch, "report, emulate").value_or(cfg.on_mismatch);
  cfg.strict = r.boolean("strict").value_or(cfg.strict);
  cfg.runtime_connect = r.boolean("runtime_connect").value_or(cfg.runtime_connect);
  cfg.eager_bytes = r.integer("eager_bytes", 0, int64_t{1} << 40).value_or(cfg.eager_bytes);
  cfg.unit_bytes = r.integer("unit_bytes", 1, 1 << 20).value_or(cfg.unit_bytes);
  cfg.max_steps =
      static_cast<uint64_t>(r.integer("max_steps", 1, int64_t{1} << 50).value_or(static_cast<int64_t>(cfg.max_steps)));
  if (auto ms = r.number("max_time_ms", 0.001, 1e12)) cfg.max_time = static_cast<core::Time>(*ms * core::kMs);
  cfg.jitter = r.number("jitter", 0, core::kMaxJitter).value_or(cfg.jitter);
  // Keys that mean something for one kind of scenario only: the watchdog of real GPUs (programs),
  // the memory the simulator's backed buffers may take (serving; programs' buffers take none).
  const bool program = hang_timeout != nullptr;
  if (program && r.has("memory_budget_mb"))
    r.fail("memory_budget_mb", "program scenarios' buffers are modelled by size only and take no memory");
  if (!program && r.has("hang_timeout_s"))
    r.fail("hang_timeout_s", "serving scenarios run on the simulator only (no watchdog)");
  if (auto mb = r.integer("memory_budget_mb", 1, int64_t{1} << 30)) cfg.memory_budget_bytes = *mb << 20;
  // The race detector watches backed buffers, which only serving runs have; a delayed stream
  // makes a race show in the outputs too (sim/race_detector.h).
  for (const char* key : {"race_detection", "delay_stream", "stream_delay_us"})
    if (program && r.has(key))
      r.fail(key, "program scenarios' buffers hold no data: races are checked in serving scenarios");
  cfg.detect_races = r.boolean("race_detection").value_or(cfg.detect_races);
  if (auto name = r.string("delay_stream")) {
    if (*name != "main" && *name != "side")
      r.fail("delay_stream",
             fmt::format("'{}' is not a stream of the engine (main, side)", core::printable(*name, 60)));
    cfg.delayed_stream = *name;
    cfg.stream_delay = 50 * core::kUs;
  }
  if (auto us = r.number("stream_delay_us", 0, 1e9)) {
    if (cfg.delayed_stream.empty()) r.fail("stream_delay_us", "a delay needs 'delay_stream', the stream it delays");
    cfg.stream_delay = us_to_time(*us);
  }
  if (auto s = r.number("hang_timeout_s", 0.1, 3600); s && program)
    *hang_timeout = static_cast<core::Time>(*s * core::kSec);
  if (const toml::table* cost = r.table("cost")) {
    TableReader c(*cost, r.file(), "[runtime.cost]");
    auto us = [&c](std::string_view key, core::Time& field) {
      if (auto v = c.number(key, 0, 1e9)) field = us_to_time(*v);
    };
    core::CostModel& m = cfg.cost;
    us("host_call_us", m.host_call);
    us("kernel_us", m.kernel);
    us("kernel_per_kwork_us", m.kernel_per_kwork);
    us("comm_latency_us", m.comm_latency);
    if (auto g = c.number("comm_gbps", 0.001, 1e6))
      m.comm_bytes_per_us = std::max<int64_t>(1, std::llround(*g * 1000.0));
    us("module_load_us", m.module_load);
    us("jit_compile_us", m.jit_compile);
    us("comm_init_us", m.comm_init);
    us("connect_us", m.connect);
    us("memcpy_us", m.memcpy);
    c.finish(kCostKeys);
  }
  r.finish(kRuntimeKeys);
}

namespace {

// `streams`: the names operations may give as their stream (default: a single stream, "main").
void read_streams(TableReader& top, Program& p) {
  const toml::array* streams = top.array("streams");
  if (streams == nullptr) return;
  p.streams.clear();
  for (const auto& n : *streams) {
    if (!n.is_string() || n.as_string()->get().empty() || n.as_string()->get().size() > kNameBytesMax ||
        core::printable(n.as_string()->get()) != n.as_string()->get())
      throw core::InputError(
          top.file(), line_of(n),
          fmt::format("'streams': expected stream names of 1..{} printable characters", kNameBytesMax));
    const std::string& s = n.as_string()->get();
    if (std::find(p.streams.begin(), p.streams.end(), s) != p.streams.end())
      throw core::InputError(top.file(), line_of(n), fmt::format("'streams': '{}' declared twice", s));
    p.streams.push_back(s);
  }
  if (p.streams.empty()) top.fail("streams", "declare at least one stream");
}

// One [[communicator]]: a unique name and its members, global ranks in order.
program::CommDecl read_communicator(TableReader& c, const Program& p) {
  program::CommDecl d;
  auto name = c.string("name");
  if (!name || name->empty()) c.fail_here("missing 'name'");
  if (find_comm(p, *name) != nullptr) c.fail("name", fmt::format("communicator '{}' declared twice", *name));
  d.name = *name;
  const toml::array* members = c.array("ranks");
  if (members == nullptr || members->empty())
    c.fail_here("missing 'ranks' (the global ranks of its members, in order)");
  for (const auto& m : *members) {
    if (!m.is_integer() || m.as_integer()->get() < 0 || m.as_integer()->get() >= p.num_ranks)
      throw core::InputError(
          c.file(), line_of(m),
          fmt::format("communicator '{}': ranks must be integers in [0, {}]", d.name, p.num_ranks - 1));
    const auto r = static_cast<core::RankId>(m.as_integer()->get());
    if (member(d, r))
      throw core::InputError(c.file(), line_of(m), fmt::format("communicator '{}': rank {} listed twice", d.name, r));
    d.ranks.push_back(r);
  }
  c.finish("name, ranks");
  return d;
}

void read_communicators(TableReader& top, Program& p) {
  const toml::array* comms = top.array("communicator");
  if (comms == nullptr) return;
  for (size_t i = 0; i < comms->size(); ++i) {
    const toml::node& n = *comms->get(i);
    if (!n.is_table()) throw core::InputError(top.file(), line_of(n), "[[communicator]]: expected a table");
    TableReader c(*n.as_table(), top.file(), fmt::format("[[communicator]] #{}", i + 1));
    p.comms.push_back(read_communicator(c, p));
  }
}

// The rank a [rank.N] table describes. Canonical numbers only: [rank.01] and [rank.1] would
// otherwise both describe rank 1.
core::RankId rank_of_table(const std::string& file, const Program& p, const std::string& k, const toml::node& node) {
  int64_t r = -1;
  auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), r);
  if (ec != std::errc() || ptr != k.data() + k.size() || r < 0 || r >= p.num_ranks || (k.size() > 1 && k[0] == '0'))
    throw core::InputError(file, line_of(node),
                           fmt::format("[rank.{}]: expected a rank number in [0, {}], without leading zeros",
                                       core::printable(k, 60), p.num_ranks - 1));
  return static_cast<core::RankId>(r);
}

// The host threads of rank `r`: its [rank.N.thread.NAME] tables, or, without any, the [rank.N]
// table itself as a single thread named "host".
std::vector<program::ThreadProgram> read_rank_threads(Context& ctx, const toml::table& t, core::RankId r) {
  const std::string where = fmt::format("[rank.{}]", r);
  std::vector<program::ThreadProgram> threads;
  if (!t.contains("thread")) {
    threads.push_back(read_thread(ctx, t, r, where, "host"));
    return threads;
  }
  TableReader rr(t, ctx.file, where);
  const toml::table* th = rr.table("thread");
  rr.finish("thread (or ops and repeat for a single thread)");
  if (th->empty()) rr.fail("thread", "declare at least one thread");
  for (const auto& [tk, tn] : *th) {
    check_thread_name(ctx.file, ctx.p, tk.str(), line_of(tn), where);
    if (!tn.is_table())
      throw core::InputError(ctx.file, line_of(tn), fmt::format("{}.thread.{}: expected a table", where, tk.str()));
    threads.push_back(
        read_thread(ctx, *tn.as_table(), r, fmt::format("[rank.{}.thread.{}]", r, tk.str()), std::string(tk.str())));
  }
  return threads;
}

// [rank.N] for every rank N, each described once.
void read_rank_tables(Context& ctx, TableReader& top) {
  Program& p = ctx.p;
  p.ranks.assign(static_cast<size_t>(p.num_ranks), {});
  const toml::table* rank_tables = top.table("rank");
  if (rank_tables == nullptr) top.fail_here("missing [rank.N] tables with each rank's operations");
  std::vector<bool> seen(static_cast<size_t>(p.num_ranks), false);
  for (const auto& [key, node] : *rank_tables) {
    const std::string k(key.str());
    const core::RankId r = rank_of_table(ctx.file, p, k, node);
    if (seen[static_cast<size_t>(r)])
      throw core::InputError(ctx.file, line_of(node), fmt::format("[rank.{}]: rank {} is described twice", k, r));
    if (!node.is_table())
      throw core::InputError(ctx.file, line_of(node), fmt::format("[rank.{}]: expected a table", k));
    seen[static_cast<size_t>(r)] = true;
    p.ranks[static_cast<size_t>(r)] = read_rank_threads(ctx, *node.as_table(), r);
  }
  for (size_t r = 0; r < seen.size(); ++r)
    if (!seen[r]) top.fail("rank", fmt::format("rank {} has no [rank.{}] table", r, r));
}

// Checks once every rank is read: events recorded anywhere on a rank may be waited for by any of
// its threads.
void check_ranks(const std::string& file, const Program& p, int line) {
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    std::set<std::string> events;
    for (const auto& tp : p.ranks[r])
      for (const auto& op : tp.ops)
        if (op.type == OpType::record) events.insert(op.event);
    for (const auto& tp : p.ranks[r]) check_thread(file, tp, static_cast<core::RankId>(r), events, line);
    check_rank_captures(file, p.ranks[r], static_cast<core::RankId>(r), line);
  }
}

}  // namespace

void read_explore(TableReader& explore, uint64_t& seed, uint64_t& seeds, core::StrategySpec& strategy) {
  seed = static_cast<uint64_t>(explore.integer("seed", 0, INT64_MAX).value_or(1));
  seeds = static_cast<uint64_t>(explore.integer("seeds", 1, 1'000'000'000).value_or(1));
  if (auto s = explore.string("strategy")) {
    auto spec = core::parse_strategy(*s);
    if (!spec) explore.fail("strategy", fmt::format("'{}' is not {}", core::printable(*s, 60), core::kStrategySyntax));
    strategy = *spec;
  }
}

Program read_program(const toml::table& root, const std::string& file) {
  Program p;
  p.file = file;
  Context ctx{file, p};
  TableReader top(root, file, "scenario");
  top.only(kProgramTopKeys);
  if (scenario_kind(root, file) != core::ScenarioKind::program)
    top.fail("kind", "expected \"program\" (a serving scenario is read by read_serving)");
  (void)top.node("kind");
  p.name = top.string_or("name", std::filesystem::path(file).stem().string());
  p.description = top.string_or("description", "");
  auto ranks = top.integer("ranks", 1, 1024);
  if (!ranks) top.fail_here("missing 'ranks' (the number of ranks, 1..1024)");
  p.num_ranks = static_cast<int>(*ranks);
  read_streams(top, p);
  if (const toml::table* rt = top.table("runtime")) {
    TableReader r(*rt, file, "[runtime]");
    read_runtime(r, p.config, &p.hang_timeout);
  }
  read_communicators(top, p);
  read_rank_tables(ctx, top);
  check_ranks(file, p, top.line("rank"));
  if (const toml::table* ex = top.table("explore")) {
    TableReader e(*ex, file, "[explore]");
    read_explore(e, p.explore.seed, p.explore.seeds, p.explore.strategy);
    e.finish("seed, seeds, strategy");
  }
  p.expect = read_expect(top, file, core::ScenarioKind::program);
  top.finish(kProgramTopKeys);
  return p;
}

Program parse_program(std::string_view text, const std::string& file) {
  return read_program(parse_toml_text(text, file), file);
}

Program load_program_file(const std::string& path) { return read_program(parse_toml_file(path), path); }

namespace {

// The verdicts each kind of scenario can produce, on the simulator and (programs) on GPUs.
using V = core::Verdict;
constexpr V kProgramVerdicts[] = {V::pass,   V::fifo_misalignment, V::deadlock,
                                  V::hazard, V::step_limit,        V::invalid_usage};
constexpr V kProgramGpuVerdicts[] = {V::pass, V::fifo_misalignment, V::hang, V::invalid_usage, V::device_fault};
// On GPUs the serving monitors run online and the trace checker over what the GPUs posted; a
// deadlock is a hang there (the watchdog's), and nothing is simulated (no step limit). A kernel
// that indexes outside its buffer is a device fault on both: the simulator's kernels check every
// index a GPU would fault on (a fuzz case that shrinks to one must be able to say so).
constexpr V kServingGpuVerdicts[] = {V::pass,
                                     V::fifo_misalignment,
                                     V::hang,
                                     V::stale_draft,
                                     V::padding_violation,
                                     V::embedding_violation,
                                     V::output_divergence,
                                     V::hazard,
                                     V::stage_divergence,
                                     V::kv_violation,
                                     V::leak,
                                     V::pipeline_bubble,
                                     V::device_fault};
constexpr V kServingVerdicts[] = {V::pass,
                                  V::fifo_misalignment,
                                  V::deadlock,
                                  V::hazard,
                                  V::stale_draft,
                                  V::padding_violation,
                                  V::embedding_violation,
                                  V::output_divergence,
                                  V::step_limit,
                                  V::hang,  // starvation: a runnable request the engine steps on without
                                  V::invalid_usage,
                                  V::race,
                                  V::stage_divergence,
                                  V::kv_violation,
                                  V::leak,
                                  V::pipeline_bubble,
                                  V::device_fault};

std::string names_of(std::span<const V> vs) {
  std::string s;
  for (V v : vs) s += fmt::format("{}{}", s.empty() ? "" : ", ", core::to_string(v));
  return s;
}

std::optional<V> read_verdict(TableReader& e, std::string_view key, std::span<const V> allowed,
                              std::string_view whose) {
  auto v = e.choice<V>(key, core::parse_verdict, core::verdict_names());
  if (v && std::find(allowed.begin(), allowed.end(), *v) == allowed.end())
    e.fail(key,
           fmt::format("{} scenarios never give '{}' (they give: {})", whose, core::to_string(*v), names_of(allowed)));
  return v;
}

std::vector<core::FindingKind> read_hazards(const toml::array& hz, const std::string& file, core::ScenarioKind kind) {
  const bool serving = kind == core::ScenarioKind::serving;
  std::vector<core::FindingKind> kinds;
  std::string known;
  for (const auto& h : core::kHazardKinds)
    if (serving || !h.serving_only) known += fmt::format("{}{}", known.empty() ? "" : ", ", h.kind);
  for (const auto& n : hz) {
    if (!n.is_string())
      throw core::InputError(file, line_of(n), "[expect] 'hazards': expected hazard kinds as strings");
    const std::string& name = n.as_string()->get();
    const auto h = std::find_if(
        core::kHazardKinds.begin(), core::kHazardKinds.end(),
        [&](const core::HazardKindName& k) { return core::to_string(k.kind) == name && (serving || !k.serving_only); });
    if (h == core::kHazardKinds.end())
      throw core::InputError(file, line_of(n),
                             fmt::format("[expect] 'hazards': '{}' is not a hazard {} scenarios note (one of: {})",
                                         core::printable(name, 60), core::to_string(kind), known));
    kinds.push_back(h->kind);
  }
  return core::sorted_kinds(std::move(kinds));
}

std::pair<double, double> read_acceptance(const toml::array& a, const std::string& file) {
  const auto bound = [&](size_t i) -> std::optional<double> {
    if (i >= a.size()) return std::nullopt;
    const toml::node& n = *a.get(i);
    if (n.is_floating_point()) return n.as_floating_point()->get();
    if (n.is_integer()) return static_cast<double>(n.as_integer()->get());
    return std::nullopt;
  };
  const auto lo = bound(0), hi = bound(1);
  if (a.size() != 2 || !lo || !hi || *lo < 0 || *hi > 1 || *lo > *hi)
    throw core::InputError(file, line_of(a), "[expect] 'acceptance': expected [lo, hi] with 0 <= lo <= hi <= 1");
  return {*lo, *hi};
}

// `kind` names the first finding's kind, one that the expected verdict can have.
std::optional<core::FindingKind> read_finding_kind(TableReader& e, V verdict) {
  auto name = e.string("kind");
  if (!name) return std::nullopt;
  if (verdict == V::pass)
    e.fail("kind", "a 'pass' has no finding, so no kind: remove 'kind' or expect a failing verdict");
  std::string known;
  for (const auto& k : core::kFindingKinds) {
    if (k.verdict != verdict) continue;
    if (core::to_string(k.kind) == *name) return k.kind;
    known += fmt::format("{}{}", known.empty() ? "" : ", ", k.kind);
  }
  e.fail("kind", fmt::format("'{}' is not a kind of '{}' (one of: {})", core::printable(*name, 60),
                             core::to_string(verdict), known));
}

}  // namespace

core::Expect read_expect(TableReader& top, const std::string& file, core::ScenarioKind kind) {
  const toml::table* expect = top.table("expect");
  core::Expect x;
  if (expect == nullptr) {
    x.given = false;  // explore mode: what happens is printed, and a pass is as expected
    return x;
  }
  TableReader e(*expect, file, "[expect]");
  e.only("verdict, gpu_verdict, hazards, kind, acceptance");
  const bool serving = kind == core::ScenarioKind::serving;
  const std::span<const V> verdicts =
      serving ? std::span<const V>(kServingVerdicts) : std::span<const V>(kProgramVerdicts);
  auto v = read_verdict(e, "verdict", verdicts, core::to_string(kind));
  if (!v) e.fail_here(fmt::format("missing 'verdict' (one of: {})", names_of(verdicts)));
  x.verdict = *v;
  x.gpu_verdict = serving ? read_verdict(e, "gpu_verdict", kServingGpuVerdicts, "on GPUs, serving")
                          : read_verdict(e, "gpu_verdict", kProgramGpuVerdicts, "on GPUs, program");
  if (const toml::array* hz = e.array("hazards")) x.hazards = read_hazards(*hz, file, kind);
  x.kind = read_finding_kind(e, x.verdict);
  if (const toml::array* a = e.array("acceptance")) {
    if (!serving) e.fail("acceptance", "program scenarios propose no drafts: 'acceptance' is for serving scenarios");
    x.acceptance = read_acceptance(*a, file);
  }
  e.finish("verdict, gpu_verdict, hazards, kind, acceptance");
  return x;
}

}  // namespace ppspec::scenario
