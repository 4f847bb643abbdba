#include "traces/trace_reader.h"

#include "core/probes.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/call_site.h"
#include "core/assert.h"
#include "core/json_depth.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/json_shown.h"

namespace ppspec::traces {

using Json = nlohmann::json;

namespace {

// Bounds of what a trace may hold. Generous for any real run; tight enough that no checker
// arithmetic on a recorded value can overflow and no message echoes a huge value.
constexpr size_t kLineBytesMax = size_t{256} << 20;  // a trailer holds the whole recorded schedule
constexpr size_t kNameBytesMax = 4096;               // actor, communicator, label, kernel, ...
constexpr size_t kTextBytesMax = 64 * 1024;
constexpr size_t kIntsMax = size_t{1} << 20;
constexpr int kDepthMax = 4;  // an event is an object holding at most one array; the trailer, its findings' sites
constexpr int64_t kIdMax = int64_t{1} << 53;
constexpr int64_t kRankMax = int64_t{1} << 20;
constexpr int64_t kCountMax = int64_t{1} << 40;
constexpr int64_t kStepMax = int64_t{1} << 40;
constexpr int64_t kValueMax = int64_t{1} << 62;

constexpr const char* kEventKeys =
    "seq, t, ev, rank, actor, comm, op_id, cseq, op, dtype, count, cols, peer, root, label, step, captured, kernel, "
    "spec, text, value, req, ints";
constexpr const char* kHeaderKeys =
    "ppspec_trace, backend, scenario, file, seed, strategy, kind, scenario_hash, content_hash, scenario_text";
constexpr const char* kTrailerKeys = "ppspec_trace_end, verdict, steps, sim_time, events, decisions, findings";

std::string_view type_of(const Json& v) {
  if (v.is_string()) return "a string";
  if (v.is_number_float()) return "a number with a fraction or exponent";
  if (v.is_number()) return "an integer";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

// Whether `key` is one of the names of a ", "-separated list.
bool listed(std::string_view list, std::string_view key) {
  while (!list.empty()) {
    const size_t comma = list.find(", ");
    if (list.substr(0, comma) == key) return true;
    if (comma == std::string_view::npos) return false;
    list.remove_prefix(comma + 2);
  }
  return false;
}

// Typed, range-checked access to the fields of one line's object.
class Fields {
 public:
  Fields(const Json& obj, const std::string& where, int line) : obj_(obj), where_(where), line_(line) {}

  [[noreturn]] void fail(std::string_view key, const std::string& message) const {
    throw core::InputError(where_, line_, fmt::format("'{}': {}", key, message));
  }
  bool has(const char* key) const { return obj_.contains(key); }

  std::optional<int64_t> integer(const char* key, int64_t min, int64_t max) const {
    if (!has(key)) return std::nullopt;
    const Json& v = obj_.at(key);
    const std::string range = fmt::format("an integer in [{}, {}]", min, max);
    if (!v.is_number_integer()) fail(key, fmt::format("expected {}, found {}", range, type_of(v)));
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max))
      fail(key, fmt::format("expected {}, found {}", range, core::shown(v)));
    const int64_t x = v.get<int64_t>();
    if (x < min || x > max) fail(key, fmt::format("expected {}, found {}", range, x));
    return x;
  }
  std::optional<uint64_t> unsigned_integer(const char* key) const {
    if (!has(key)) return std::nullopt;
    const Json& v = obj_.at(key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      fail(key, fmt::format("expected a non-negative integer, found {}",
                            v.is_number() ? core::shown(v) : std::string(type_of(v))));
    return v.get<uint64_t>();
  }
  // A string with no control characters (it ends up in reports, where a newline forges lines);
  // `lines`: a file's text, whose newlines, tabs and carriage returns are its own.
  std::optional<std::string_view> string(const char* key, size_t max_bytes, bool lines = false) const {
    if (!has(key)) return std::nullopt;
    const Json& v = obj_.at(key);
    if (!v.is_string()) fail(key, fmt::format("expected a string, found {}", type_of(v)));
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() > max_bytes) fail(key, fmt::format("a string of {} bytes (at most {})", s.size(), max_bytes));
    for (char c : s) {
      if (static_cast<unsigned char>(c) >= 0x20 || (lines && (c == '\n' || c == '\t' || c == '\r'))) continue;
      fail(key, fmt::format("a string with control character 0x{:02x}", static_cast<int>(c)));
    }
    return std::string_view(s);
  }
  std::string_view required_string(const char* key, size_t max_bytes) const {
    auto s = string(key, max_bytes);
    if (!s) throw core::InputError(where_, line_, fmt::format("missing '{}'", key));
    return *s;
  }
  std::optional<bool> boolean(const char* key) const {
    if (!has(key)) return std::nullopt;
    const Json& v = obj_.at(key);
    if (!v.is_boolean()) fail(key, fmt::format("expected true or false, found {}", type_of(v)));
    return v.get<bool>();
  }
  void only(std::string_view known) const {
    for (const auto& [key, value] : obj_.items()) {
      if (listed(known, key)) continue;
      throw core::InputError(where_, line_,
                             fmt::format("unknown key '{}' (expected one of: {})", core::printable(key, 40), known));
    }
  }

 private:
  const Json& obj_;
  const std::string& where_;
  int line_;
};

std::optional<core::EventKind> parse_kind(std::string_view s) {
  for (int k = 0; k <= static_cast<int>(core::EventKind::verdict); ++k)
    if (core::to_string(static_cast<core::EventKind>(k)) == s) return static_cast<core::EventKind>(k);
  return std::nullopt;
}

}  // namespace

TraceReader::TraceReader(const std::string& path, Options options) : where_(path), options_(options) {
  file_ = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*file_) throw core::InputError(path, 0, fmt::format("cannot open the trace: {}", std::strerror(errno)));
  in_ = file_.get();
  read_header();
}

TraceReader::TraceReader(std::istream& in, std::string where, Options options)
    : in_(&in), where_(std::move(where)), options_(options) {
  read_header();
}

bool TraceReader::read_line(std::string& out) {
  out.clear();
  for (;;) {
    const int c = in_->get();
    if (c == std::char_traits<char>::eof()) {
      if (in_->bad()) throw core::InputError(where_, line_ + 1, "reading the trace failed");
      if (out.empty()) return false;
      break;
    }
    if (c == '\n') break;
    if (out.size() >= kLineBytesMax)
      throw core::InputError(where_, line_ + 1, fmt::format("a line longer than {} MiB", kLineBytesMax >> 20));
    out.push_back(static_cast<char>(c));
  }
  ++line_;
  return true;
}

void TraceReader::read_header() {
  std::string text;
  while (read_line(text) && text.empty()) {}
  if (text.empty()) throw core::InputError(where_, 1, "empty trace: no header line");
  if (core::json_too_deep(text, kDepthMax))
    throw core::InputError(where_, line_, "nested too deeply for a trace header");
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ppspec_trace"))
    throw core::InputError(where_, line_, "the first line must be the trace header {\"ppspec_trace\":1,...}");
  const Fields f(j, where_, line_);
  f.only(kHeaderKeys);
  if (f.integer("ppspec_trace", 0, 1 << 30) != kTraceVersion)
    f.fail("ppspec_trace", fmt::format("unsupported trace version (this ppspec reads version {})", kTraceVersion));
  const std::optional<TraceBackend> backend = parse_trace_backend(f.string("backend", 16).value_or("sim"));
  if (!backend) f.fail("backend", "expected \"sim\", \"gpu\" or \"nccl-profiler\"");
  header_.backend = *backend;
  header_.scenario = std::string(f.string("scenario", kNameBytesMax).value_or(""));
  header_.file = std::string(f.string("file", kNameBytesMax).value_or(""));
  header_.seed = f.unsigned_integer("seed").value_or(0);
  header_.strategy = std::string(f.string("strategy", kNameBytesMax).value_or(""));
  if (const std::optional<std::string_view> kind = f.string("kind", 16); kind && !kind->empty()) {
    header_.kind = core::parse_scenario_kind(*kind);
    if (!header_.kind) f.fail("kind", "expected \"program\" or \"serving\"");
  }
  if (auto h = f.string("scenario_hash", 64)) {
    header_.scenario_hash = parse_hash_hex(std::string(*h));
    if (!header_.scenario_hash) f.fail("scenario_hash", "expected 16 lower-case hex digits");
  }
  if (auto h = f.string("content_hash", 64)) {
    header_.content_hash = parse_hash_hex(std::string(*h));
    if (!header_.content_hash) f.fail("content_hash", "expected 16 lower-case hex digits");
  }
  header_.scenario_text =
      std::string(f.string("scenario_text", kEmbeddedScenarioBytesMax, /*lines=*/true).value_or(""));
  if (!header_.scenario_text.empty() && !header_.scenario_hash)
    f.fail("scenario_text", "an embedded scenario without its scenario_hash");
}

namespace {

std::vector<RecordedFinding> recorded_findings(const Json& list, const Fields& f) {
  if (!list.is_array() || list.size() > 1024) f.fail("findings", "expected a list of at most 1024 findings");
  std::vector<RecordedFinding> out;
  for (const Json& x : list) {
    const bool ok = x.is_object() && x.contains("verdict") && x.at("verdict").is_string() && x.contains("kind") &&
                    x.at("kind").is_string() && x.contains("summary") && x.at("summary").is_string() &&
                    x.contains("sites") && x.at("sites").is_array();
    if (!ok) f.fail("findings", "expected objects of verdict, kind, summary and sites");
    RecordedFinding r;
    const auto v = core::parse_verdict(x.at("verdict").get<std::string>());
    if (!v) f.fail("findings", fmt::format("verdict: expected one of: {}", core::verdict_names()));
    r.verdict = *v;
    const auto kind = core::parse_finding_kind(x.at("kind").get<std::string>());
    if (!kind) f.fail("findings", "kind: not a kind of finding ppspec reports");
    r.kind = *kind;
    r.summary = x.at("summary").get<std::string>();
    for (const Json& site : x.at("sites")) {
      if (!site.is_string()) f.fail("findings", "a site that is not a string");
      r.sites.push_back(site.get<std::string>());
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

void TraceReader::read_trailer(const std::string& text) {
  const Json j = Json::parse(text, nullptr, false);
  const Fields f(j, where_, line_);
  f.only(kTrailerKeys);
  if (f.integer("ppspec_trace_end", 0, 1 << 30) != kTraceVersion)
    f.fail("ppspec_trace_end", "does not match the header's version");
  TraceTrailer t;
  t.line = line_;
  const auto verdict = core::parse_verdict(f.required_string("verdict", 64));
  if (!verdict) f.fail("verdict", fmt::format("expected one of: {}", core::verdict_names()));
  t.verdict = *verdict;
  t.steps = f.unsigned_integer("steps").value_or(0);
  t.sim_time = f.integer("sim_time", 0, kValueMax).value_or(0);
  t.events = f.unsigned_integer("events");
  if (j.contains("decisions")) {
    const Json& d = j.at("decisions");
    if (!d.is_array()) f.fail("decisions", "expected an array of fiber ids");
    for (const Json& x : d) {
      if (!x.is_number_unsigned() || x.get<uint64_t>() > UINT32_MAX)
        f.fail("decisions", "expected fiber ids in [0, 2^32)");
      t.decisions.push_back(static_cast<uint32_t>(x.get<uint64_t>()));
    }
  }
  if (j.contains("findings")) t.findings = recorded_findings(j.at("findings"), f);
  if (t.events && *t.events != events_)
    throw core::InputError(
        where_, line_,
        fmt::format("the trailer counts {} events, the trace holds {}: lines were lost or added", *t.events, events_));
  trailer_ = t;
}

void TraceReader::finish() {
  done_ = true;
  std::string text;
  while (read_line(text))
    if (!text.empty()) throw core::InputError(where_, line_, "a line after the trailer");
}

namespace {

// One event's strings are kept here until the next event replaces them.
struct EventStorage {
  std::deque<std::string>& strings;
  std::vector<int64_t>& ints;
  std::string_view view(const Fields& f, const char* key, size_t max_bytes) {
    auto s = f.string(key, max_bytes);
    if (!s) return {};
    return strings.emplace_back(*s);
  }
};

void read_op(const Fields& f, core::Event& e, EventStorage& store) {
  e.has_op = true;
  const auto op = core::parse_op_kind(f.required_string("op", 64));
  if (!op) f.fail("op", "expected send, recv, broadcast, all_reduce, all_gather, all_to_all, reduce or reduce_scatter");
  const auto dt = core::parse_dtype(f.required_string("dtype", 64));
  if (!dt) f.fail("dtype", fmt::format("expected one of: {}", core::dtype_names()));
  e.op.kind = *op;
  e.op.dtype = *dt;
  const auto count = f.integer("count", 0, kCountMax);
  if (!count) f.fail("count", "missing: an operation needs its element count");
  e.op.count = *count;
  e.op.cols = f.integer("cols", 1, kCountMax).value_or(1);
  const char* peer_key = core::has_root(e.op.kind) ? "root" : "peer";
  e.op.peer = static_cast<core::RankId>(f.integer(peer_key, -1, kRankMax).value_or(-1));
  e.op.label.name = store.view(f, "label", kNameBytesMax);
  e.op.label.step = f.integer("step", -1, kStepMax).value_or(-1);
  e.op.captured = f.boolean("captured").value_or(false);
}

void read_ints(const Fields& f, const Json& j, core::Event& e, EventStorage& store) {
  if (!j.contains("ints")) return;
  const Json& a = j.at("ints");
  if (!a.is_array() || a.size() > kIntsMax)
    f.fail("ints", fmt::format("expected an array of at most {} integers", kIntsMax));
  // Probes report device memory as it is: any 64-bit word (an unstored one holds the poison).
  for (const Json& x : a) {
    if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
      f.fail("ints", fmt::format("expected 64-bit signed integers, found {}", core::shown(x)));
    store.ints.push_back(x.get<int64_t>());
  }
  e.ints = store.ints;
}

// A probe with a typed subject writes it as "text": read it back into its field, or say what was
// expected. Older traces wrote the same names.
template <typename T>
T subject_or_fail(const Fields& f, std::string_view text, std::optional<T> parsed, const std::string& expected) {
  if (!parsed) f.fail("text", fmt::format("'{}' is not one of: {}", core::printable(text, 40), expected));
  return *parsed;
}

void read_subject(const Fields& f, core::Event& e) {
  switch (e.kind) {
    case core::EventKind::warmup_phase:
      e.subject.phase = subject_or_fail(f, e.text, core::parse_warmup_phase(e.text), core::warmup_phase_names());
      return;
    case core::EventKind::padding_rows:
      e.subject.padding_kernel =
          subject_or_fail(f, e.text, core::parse_padding_kernel(e.text), core::padding_kernel_names());
      return;
    case core::EventKind::table_bound:
      e.subject.table = subject_or_fail(f, e.text, core::parse_weight_table(e.text), core::weight_table_names());
      return;
    case core::EventKind::batch_scheduled:
      e.subject.step_kind = subject_or_fail(f, e.text, core::parse_step_kind(e.text), "warmup, or no text");
      return;
    case core::EventKind::blocks_freed:
    case core::EventKind::request_released:
      e.subject.release = subject_or_fail(f, e.text, core::parse_release(e.text), core::release_names());
      return;
    case core::EventKind::kv_slots:
      e.subject.kv_writer = subject_or_fail(f, e.text, core::parse_kv_writer(e.text), core::kv_writer_names());
      return;
    default: return;
  }
}

// Every field of one event line, checked.
void read_event(const Fields& f, const Json& j, core::Event& e, EventStorage& store, uint64_t index) {
  e = core::Event{};
  const std::string_view kind = f.required_string("ev", 64);
  const auto k = parse_kind(kind);
  if (!k) f.fail("ev", fmt::format("unknown event kind '{}'", core::printable(kind, 40)));
  e.kind = *k;
  e.seq = static_cast<uint64_t>(f.integer("seq", 0, kIdMax).value_or(static_cast<int64_t>(index)));
  e.t = f.integer("t", 0, kValueMax).value_or(0);
  e.rank = static_cast<core::RankId>(f.integer("rank", -1, kRankMax).value_or(-1));
  e.actor = store.view(f, "actor", kNameBytesMax);
  e.comm = store.view(f, "comm", kNameBytesMax);
  e.op_id = f.integer("op_id", -1, kIdMax).value_or(-1);
  e.cseq = f.integer("cseq", -1, kIdMax).value_or(-1);
  if (f.has("op")) read_op(f, e, store);
  e.kernel = store.view(f, "kernel", kNameBytesMax);
  e.spec = store.view(f, "spec", kNameBytesMax);
  e.text = store.view(f, "text", kTextBytesMax);
  read_subject(f, e);
  // `value` is a row, a count or a flag for the probes that do arithmetic on it, a hash for
  // table_bound, an age in nanoseconds for a hang dump.
  const bool row_value = e.kind == core::EventKind::padding_rows || e.kind == core::EventKind::batch_scheduled ||
                         e.kind == core::EventKind::inputs_built || e.kind == core::EventKind::gate;
  e.value = f.integer("value", -1, row_value ? kCountMax : INT64_MAX).value_or(-1);
  e.req = f.integer("req", -kIdMax, kIdMax).value_or(-1);  // -1: none; -2, -3, ...: warmup's synthetic requests
  e.step = f.integer("step", -1, kStepMax).value_or(-1);
  // Module loads carry their step since trace version 1 had them name it only in their call site.
  if (e.kind == core::EventKind::module_load && e.step < 0) e.step = core::step_of_call_site(e.text).value_or(-1);
  read_ints(f, j, e, store);
  // The layout of a probe's integers is the format's (core/probes.h). It is checked here, so that
  // bad input is exit 2 with its line, where a decode would stop on an internal error.
  if (!core::probe_layout_ok(e)) {
    const std::string value_error = core::probe_value_error(e);
    f.fail(value_error.empty() ? "ints" : "value", value_error.empty() ? core::probe_layout_error(e) : value_error);
  }
}

}  // namespace

void TraceReader::limit_ranks(int ranks, std::string what) {
  PPSPEC_ASSERT(ranks > 0, "a scenario of {} ranks", ranks);
  ranks_ = ranks;
  ranks_of_ = std::move(what);
}

const core::Event* TraceReader::next() {
  if (done_) return nullptr;
  std::string text;
  do {
    if (!read_line(text)) {
      done_ = true;
      if (options_.require_trailer)
        throw core::InputError(where_, line_,
                               "the trace ends without its trailer: the run was killed or the file was cut, so what "
                               "remains cannot be checked as a whole");
      return nullptr;
    }
  } while (text.empty());
  if (core::json_too_deep(text, kDepthMax))
    throw core::InputError(where_, line_, "nested too deeply for a trace record");
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) throw core::InputError(where_, line_, "not JSON");
  if (!j.is_object()) throw core::InputError(where_, line_, "expected a JSON object per line");
  if (j.contains("ppspec_trace")) throw core::InputError(where_, line_, "a second trace header");
  if (j.contains("ppspec_trace_end")) {
    read_trailer(text);
    finish();
    return nullptr;
  }
  const Fields f(j, where_, line_);
  f.only(kEventKeys);
  strings_.clear();
  ints_.clear();
  EventStorage store{strings_, ints_};
  read_event(f, j, event_, store, events_);
  if (ranks_ > 0 && event_.rank >= ranks_)
    throw core::InputError(
        where_, line_, fmt::format("rank {} is not a rank of {} (ranks 0..{})", event_.rank, ranks_of_, ranks_ - 1));
  fill_position(event_);
  check_across_lines(event_);
  ++events_;
  return &event_;
}

// An operation's position on its communicator, as NCCL pairs by it: a rank's collectives counted
// from 0, and a rank's sends to (receives from) one peer. Given, it is kept; left out (a trace a
// user's tool wrote), it is counted here.
void TraceReader::fill_position(core::Event& e) {
  if (e.kind != core::EventKind::op_posted || !e.has_op) return;
  constexpr size_t kPositionsMax = size_t{1} << 20;
  const bool p2p = core::is_p2p(e.op.kind);
  const auto key =
      std::make_tuple(std::string(e.comm), static_cast<int>(e.rank), p2p ? static_cast<int>(e.op.peer) : -1,
                      p2p ? static_cast<int>(e.op.kind == core::OpKind::send) : 0);
  auto it = next_position_.find(key);
  if (it == next_position_.end()) {
    if (next_position_.size() >= kPositionsMax)
      throw core::InputError(where_, line_, fmt::format("more than {} communicator positions to count", kPositionsMax));
    it = next_position_.emplace(key, 0).first;
  }
  if (e.cseq < 0) e.cseq = it->second;
  it->second = e.cseq + 1;
}

void TraceReader::check_across_lines(const core::Event& e) {
  if (last_seq_ && e.seq <= *last_seq_)
    throw core::InputError(where_, line_,
                           fmt::format("seq {} after seq {}: events out of order (a trace lists them as they happened)",
                                       e.seq, *last_seq_));
  last_seq_ = e.seq;
  const bool op_event = e.kind == core::EventKind::op_posted || e.kind == core::EventKind::op_paired ||
                        e.kind == core::EventKind::op_started || e.kind == core::EventKind::op_completed ||
                        e.kind == core::EventKind::op_pending;
  if (!op_event) return;
  if (core::is_pending_kernel(e)) {
    if (e.has_op || !e.comm.empty())
      throw core::InputError(
          where_, line_,
          fmt::format("op_pending names kernel '{}' and an operation: a pending report is of one or the other",
                      e.kernel));
    return;
  }
  if (e.comm.empty())
    throw core::InputError(where_, line_,
                           fmt::format("{} of op {} names no communicator ('comm')", core::to_string(e.kind), e.op_id));
  if (e.op_id < 0) throw core::InputError(where_, line_, fmt::format("{} without its op_id", core::to_string(e.kind)));
  if (e.kind == core::EventKind::op_posted) {
    const auto [it, fresh] = posted_at_.try_emplace(e.op_id, line_);
    if (!fresh)
      throw core::InputError(where_, line_,
                             fmt::format("op_id {} posted a second time (first at line {})", e.op_id, it->second));
    return;
  }
  if (!posted_at_.count(e.op_id))
    throw core::InputError(
        where_, line_, fmt::format("{} of op_id {}, which no earlier line posted", core::to_string(e.kind), e.op_id));
  // A pairing can come after a completion (an eager send completes before its receive is posted).
  if (completed_.count(e.op_id) && e.kind != core::EventKind::op_paired)
    throw core::InputError(where_, line_,
                           fmt::format("{} of op_id {} after its completion", core::to_string(e.kind), e.op_id));
  if (e.kind == core::EventKind::op_completed) completed_.insert(e.op_id);
}

}  // namespace ppspec::traces
