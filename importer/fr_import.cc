#include "importer/fr_import.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <optional>
#include <set>

#include "core/assert.h"
#include "core/error.h"
#include "traces/torch_dtype.h"
#include "verify/dumps/fr_job.h"

namespace ppspec::importer {
namespace {

using traces::FrEntry;
using verify::FrJob;
using verify::FrJobGroup;
using verify::FrOp;

constexpr size_t kStreamsMax = 64;  // a rank's streams in a scenario

// A group as a communicator name: "pg1.pp_broadcast", or "pg1" where PyTorch gives no description.
std::string comm_name(const FrJobGroup& g) {
  if (g.desc.empty() || g.desc == "undefined" || g.desc == g.name) return "pg" + g.name;
  return fmt::format("pg{}.{}", g.name, g.desc);
}

std::optional<program::OpType> op_type(const std::string& op) {
  static const std::map<std::string, program::OpType> types = {
      {"send", program::OpType::send},           {"recv", program::OpType::recv},
      {"broadcast", program::OpType::broadcast}, {"all_reduce", program::OpType::all_reduce},
      {"allreduce", program::OpType::all_reduce}, {"barrier", program::OpType::all_reduce},
      {"all_gather", program::OpType::all_gather}, {"allgather", program::OpType::all_gather},
      {"_allgather_base", program::OpType::all_gather}, {"all_gather_into_tensor", program::OpType::all_gather},
      {"all_to_all", program::OpType::all_to_all}, {"alltoall", program::OpType::all_to_all},
      {"alltoall_base", program::OpType::all_to_all}};
  const auto it = types.find(op);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

// Every FrOp of the job by its rank and its place in that rank's record order.
using OpIndex = std::map<int, std::vector<const FrOp*>>;

OpIndex index_ops(const FrJob& job) {
  OpIndex index;
  for (const auto& [rank, dump] : job.by_rank) index[rank].assign(dump->entries.size(), nullptr);
  auto add = [&index](const FrOp& op) {
    std::vector<const FrOp*>& ops = index.at(op.dump->rank);
    PPSPEC_ASSERT(op.order < ops.size() && ops[op.order] == nullptr, "record {} of rank {} indexed twice", op.order, op.dump->rank);
    ops[op.order] = &op;
  };
  for (const FrJobGroup& g : job.groups)
    for (const std::vector<FrOp>& lane : g.lanes)
      for (const FrOp& op : lane) add(op);
  for (const verify::FrChannel& c : job.channels) {
    for (const FrOp& op : c.sends) add(op);
    for (const FrOp& op : c.recvs) add(op);
  }
  return index;
}

// The call site every dumped member of `g` names for its collective `seq`, or "" when any differs or
// has none.
std::string agreed_call_site(const FrJobGroup& g, int64_t seq) {
  std::optional<std::string> site;
  for (size_t m = 0; m < g.lanes.size(); ++m) {
    if (!g.dumped[m]) continue;
    const auto it = std::find_if(g.lanes[m].begin(), g.lanes[m].end(), [seq](const FrOp& op) { return op.entry->collective_seq_id == seq; });
    if (it == g.lanes[m].end()) return "";
    const std::vector<std::string> frames = verify::user_frames(*it->entry, 1);
    if (frames.empty() || (site && *site != frames[0])) return "";
    site = frames[0];
  }
  return site.value_or("");
}

int64_t elements(const FrEntry& e, const std::string& file) {
  if (e.input_sizes.size() > 1)
    throw core::InputError(file, 0, fmt::format("record {}: {} carries {} tensors; a program scenario's operation carries one",
                                                e.record_id, e.profiling_name, e.input_sizes.size()));
  int64_t n = 1;
  for (const int64_t d : e.input_sizes.empty() ? std::vector<int64_t>{0} : e.input_sizes[0]) n *= d;
  return n;
}

program::ProgramOp op_of(const FrOp& fr, const FrJob& job) {
  const FrEntry& e = *fr.entry;
  const std::string& file = fr.dump->file;
  const std::optional<program::OpType> type = op_type(e.op);
  if (!type)
    throw core::InputError(file, 0, fmt::format("record {}: {} has no counterpart in program scenarios (they have send, recv, "
                                                "broadcast, all_reduce, all_gather, all_to_all)", e.record_id, e.profiling_name));
  const FrJobGroup& g = job.groups[fr.group];
  program::ProgramOp op;
  op.type = *type;
  op.comm = comm_name(g);
  const std::string torch = e.input_dtypes.empty() ? "Byte" : e.input_dtypes[0];
  const std::optional<core::Dtype> dtype = traces::parse_torch_dtype(torch);
  if (!dtype) throw core::InputError(file, 0, fmt::format("record {}: dtype {} has no counterpart in ppspec", e.record_id, torch));
  op.dtype = *dtype;
  op.count = elements(e, file);
  if (program::is_p2p_op(op.type)) op.peer = e.peer;
  if (op.type == program::OpType::broadcast) op.peer = g.ranks.front();
  if (!program::is_p2p_op(op.type)) op.label = agreed_call_site(g, e.collective_seq_id);
  op.origin = fmt::format("{} record {}", file, e.record_id);
  op.note = fmt::format("{}: {} ({}{}{})", verify::origin_of(fr), verify::describe(e), traces::to_string(fr.state),
                        e.thread.empty() ? "" : ", thread ", e.thread);
  return op;
}

program::ProgramOp bare(program::OpType type, const std::string& stream = "") {
  program::ProgramOp op;
  op.type = type;
  op.stream = stream;
  return op;
}

// When an operation of a rank ended, as far as its dump says (a coalesced member's times are its
// closing record's).
struct Observed {
  bool began = false, done = false;
  int64_t started_ns = 0, completed_ns = 0;  // 0: not recorded
};

Observed observed(const FrOp& op) {
  const FrEntry& e = op.coalesced == SIZE_MAX ? *op.entry : op.dump->entries[op.coalesced];
  return Observed{op.state != traces::FrState::scheduled, op.state == traces::FrState::completed, e.started_ns, e.completed_ns};
}

// A stream of the scenario: the operations placed on it so far, summed up as what a later one
// must not contradict to run after them.
struct StreamSoFar {
  bool all_done = true;
  int64_t last_completed_ns = 0;
};

// Whether the dumps show `op` did not wait for everything already on `s`: it began while one of
// them had not completed, or began or completed before one of them completed.
bool overlaps(const StreamSoFar& s, const Observed& op) {
  if (op.began && !s.all_done) return true;
  if (op.done && op.completed_ns > 0 && op.completed_ns < s.last_completed_ns) return true;
  return op.started_ns > 0 && op.started_ns < s.last_completed_ns;
}

// Where an operation goes: its stream, and the streams whose operations so far it must wait for
// first (an event recorded on each, waited on by its stream).
struct Placement {
  size_t stream = 0;
  std::vector<size_t> waits_for;
};

// The operations of one rank placed on streams "s0", "s1", ... in record order, so that each waits
// for every operation recorded before it that the dumps do not show it overlapped: on the stream
// used last that it did not overlap (a new one when there is none), after an event of every other
// such stream. A coalesced group goes whole on one stream.
class StreamPlacer {
 public:
  explicit StreamPlacer(const std::string& file) : file_(file) {}

  // `recorded`: the stream the operation ran on, when the input says (an index of the rank's own).
  Placement place(const FrOp& op, std::optional<size_t> recorded) {
    const Observed o = observed(op);
    if (op.coalesced != SIZE_MAX && op.coalesced == group_) return Placement{add(group_stream_, o), {}};
    Placement p{recorded ? grow_to(*recorded) : pick(o, op), {}};
    for (size_t y = 0; y < streams_.size(); ++y) {
      if (y == p.stream || overlaps(streams_[y], o) || streams_[y].ops <= waited_[p.stream][y]) continue;
      p.waits_for.push_back(y);
      waited_[p.stream][y] = streams_[y].ops;
    }
    group_ = op.coalesced;
    group_stream_ = p.stream;
    add(p.stream, o);
    return p;
  }
  size_t streams() const { return streams_.size(); }

 private:
  struct Stream : StreamSoFar {
    size_t ops = 0;
    size_t last_use = 0;
  };
  // The stream used last among those `o` did not overlap; a new one when it overlapped them all.
  size_t pick(const Observed& o, const FrOp& op) {
    size_t best = SIZE_MAX;
    for (size_t s = 0; s < streams_.size(); ++s)
      if (!overlaps(streams_[s], o) && (best == SIZE_MAX || streams_[s].last_use > streams_[best].last_use)) best = s;
    if (best != SIZE_MAX) return best;
    if (streams_.size() == kStreamsMax)
      throw core::InputError(file_, 0, fmt::format("record {}: more than {} operations of this rank ran at once by its dump's "
                                                   "states and times; a scenario holds at most {} streams a rank",
                                                   op.entry->record_id, kStreamsMax, kStreamsMax));
    return grow_to(streams_.size());
  }
  size_t grow_to(size_t s) {
    PPSPEC_ASSERT(s < kStreamsMax, "stream {} of a rank (at most {})", s, kStreamsMax);
    while (streams_.size() <= s) {
      streams_.emplace_back();
      for (std::vector<size_t>& w : waited_) w.push_back(0);
      waited_.emplace_back(streams_.size(), 0);
    }
    return s;
  }
  size_t add(size_t s, const Observed& o) {
    Stream& st = streams_[s];
    st.all_done = st.all_done && o.done;
    st.last_completed_ns = std::max(st.last_completed_ns, o.completed_ns);
    ++st.ops;
    st.last_use = ++uses_;
    return s;
  }
  const std::string& file_;
  std::vector<Stream> streams_;
  std::vector<std::vector<size_t>> waited_;  // [x][y]: how many of y's operations x has waited for
  size_t uses_ = 0;
  size_t group_ = SIZE_MAX, group_stream_ = 0;
};

// A rank's streams by name: "s0", "s1", ... as placed, or the names the input recorded.
class StreamNames {
 public:
  explicit StreamNames(bool recorded) : recorded_(recorded) {}
  // The recorded stream of an entry (a ppspec trace exported as dumps names the stream an operation
  // ran on, "rank0.s1", as its thread), as an index of this rank's; nullopt when streams are placed.
  std::optional<size_t> recorded(const FrEntry& e, const std::string& file) {
    if (!recorded_) return std::nullopt;
    const size_t dot = e.thread.find('.'), space = e.thread.find(' ');
    const std::string name = dot == std::string::npos ? "" : e.thread.substr(dot + 1, space == std::string::npos ? std::string::npos : space - dot - 1);
    if (name.empty()) throw core::InputError(file, 0, fmt::format("record {}: no stream recorded ('{}')", e.record_id, e.thread));
    const auto it = std::find(names_.begin(), names_.end(), name);
    if (it != names_.end()) return static_cast<size_t>(it - names_.begin());
    if (names_.size() == kStreamsMax) throw core::InputError(file, 0, fmt::format("more than {} streams on one rank", kStreamsMax));
    names_.push_back(name);
    return names_.size() - 1;
  }
  std::string name(size_t s) const { return recorded_ ? names_.at(s) : fmt::format("s{}", s); }

 private:
  bool recorded_;
  std::vector<std::string> names_;
};

// One rank's host thread: its operations in record order (the order NCCL received them, whichever
// of the job's threads made them), a coalesced group between group_start and group_end, each
// after the events it waits for, then a wait for every stream it used.
program::ThreadProgram thread_of(const traces::FrDump& dump, const std::vector<const FrOp*>& ops, const FrJob& job,
                                 bool recorded_streams, Imported& out) {
  program::ThreadProgram t;
  std::set<size_t> used;
  bool in_group = false;
  StreamPlacer placer(dump.file);
  StreamNames names(recorded_streams);
  size_t events = 0;
  for (size_t i = 0; i < dump.entries.size(); ++i) {
    if (dump.entries[i].op == "coalesced") {
      if (in_group) t.ops.push_back(bare(program::OpType::group_end));
      in_group = false;
      continue;
    }
    const FrOp* fr = ops[i];
    PPSPEC_ASSERT(fr != nullptr, "record {} of {} is in no group or channel", i, dump.file);
    const Placement at = placer.place(*fr, names.recorded(*fr->entry, dump.file));
    for (const size_t y : at.waits_for) {
      program::ProgramOp record = bare(program::OpType::record, names.name(y));
      record.event = fmt::format("e{}", events++);
      program::ProgramOp wait = bare(program::OpType::wait_event, names.name(at.stream));
      wait.event = record.event;
      t.ops.push_back(std::move(record));
      t.ops.push_back(std::move(wait));
    }
    if (fr->coalesced != SIZE_MAX && !in_group) t.ops.push_back(bare(program::OpType::group_start));
    in_group = in_group || fr->coalesced != SIZE_MAX;
    program::ProgramOp op = op_of(*fr, job);
    op.stream = names.name(at.stream);
    used.insert(at.stream);
    t.ops.push_back(std::move(op));
    ++out.operations;
  }
  if (in_group) t.ops.push_back(bare(program::OpType::group_end));
  for (const size_t s : used) {
    t.ops.push_back(bare(program::OpType::stream_sync, names.name(s)));
    if (std::find(out.stream_names.begin(), out.stream_names.end(), names.name(s)) == out.stream_names.end())
      out.stream_names.push_back(names.name(s));
  }
  return t;
}

// What the scenario assumes where the dumps are silent, for the user to read and change.
void add_assumptions(const OpIndex& index, const ImportOptions& options, Imported& out) {
  out.notes.push_back(
      "one host thread per rank, calling in record order: the order NCCL received the calls, whichever thread made them "
      "(each operation's comment names its thread)");
  if (options.recorded_streams)
    out.notes.push_back(
        "streams: each call on the stream the trace recorded; it also waits for every call recorded before it on another "
        "stream (as one without async_op does) except those the trace shows it overlapped, through an event");
  else
    out.notes.push_back(
      "streams: a call waits for every call recorded before it (as one without async_op does) except those the dumps' "
      "states and times show it overlapped (it began while one had not completed, or completed first): it goes on another "
      "stream than those, after an event of each other stream");
  out.notes.push_back("every communicator connects its members when it is created (runtime_connect = false)");
  const bool broadcasts = std::any_of(index.begin(), index.end(), [](const auto& kv) {
    return std::any_of(kv.second.begin(), kv.second.end(), [](const FrOp* op) { return op != nullptr && op->entry->op == "broadcast"; });
  });
  if (broadcasts) out.notes.push_back("broadcast roots are not in Flight Recorder dumps: each broadcast's root is its group's first member");
}

void refuse_dropped_records(const FrJob& job) {
  for (const auto& [rank, dropped] : job.dropped) {
    if (dropped <= 0) continue;
    throw core::InputError(job.by_rank.at(rank)->file, 0,
                           fmt::format("rank {}'s ring buffer dropped its first {} records: a scenario needs every operation "
                                       "from the start (raise TORCH_NCCL_TRACE_BUFFER_SIZE and dump again)", rank, dropped));
  }
}

}  // namespace

Imported import_flight_recorder(const traces::FrDumpSet& set, const std::string& name, const ImportOptions& options) {
  const FrJob job = verify::make_job(set.dumps);
  refuse_dropped_records(job);
  Imported out;
  program::Program& p = out.program;
  p.name = name;
  int ranks = job.by_rank.empty() ? 0 : job.by_rank.rbegin()->first + 1;
  for (const FrJobGroup& g : job.groups) {
    const bool used = std::any_of(g.lanes.begin(), g.lanes.end(), [](const auto& lane) { return !lane.empty(); }) ||
                      std::any_of(job.channels.begin(), job.channels.end(), [&](const verify::FrChannel& c) { return &job.groups[c.group] == &g; });
    if (!used) continue;
    p.comms.push_back(program::CommDecl{comm_name(g), std::vector<core::RankId>(g.ranks.begin(), g.ranks.end())});
    for (const int r : g.ranks) ranks = std::max(ranks, r + 1);
  }
  p.num_ranks = ranks;
  p.ranks.resize(static_cast<size_t>(ranks));
  const OpIndex index = index_ops(job);
  for (int r = 0; r < ranks; ++r) {
    const auto it = job.by_rank.find(r);
    if (it != job.by_rank.end()) {
      p.ranks[static_cast<size_t>(r)].push_back(thread_of(*it->second, index.at(r), job, options.recorded_streams, out));
      continue;
    }
    p.ranks[static_cast<size_t>(r)].push_back(program::ThreadProgram{});
    out.notes.push_back(fmt::format("rank {} left no dump: it posts nothing in the scenario", r));
  }
  p.streams = out.stream_names.empty() ? std::vector<std::string>{"s0"} : out.stream_names;
  if (!options.recorded_streams) std::sort(p.streams.begin(), p.streams.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;  // s0, s1, ..., s10
  });
  // A dump records a call before NCCL connects its peers, so it cannot tell whether the host blocked
  // there (R1); connecting every communicator at creation keeps each host posting what it recorded.
  p.config.runtime_connect = false;
  add_assumptions(index, options, out);
  p.description = fmt::format(
      "Imported by `ppspec import` from the Flight Recorder dumps {} ({} ranks, file prefix '{}'): each rank posts its "
      "operations in its dump's record order. Assumed where the dumps are silent: {}.",
      set.where, job.by_rank.size(), set.prefix, fmt::join(out.notes, "; "));
  return out;
}

}  // namespace ppspec::importer
