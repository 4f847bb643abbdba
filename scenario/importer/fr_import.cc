#include "scenario/importer/fr_import.h"

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
#include "verify/dumps/fr_streams.h"

namespace ppspec::importer {
namespace {

using traces::FrEntry;
using verify::FrJob;
using verify::FrJobGroup;
using verify::FrOp;

// A group as a communicator name: "pg1.pp_broadcast", or "pg1" where PyTorch gives no description.
std::string comm_name(const FrJobGroup& g) {
  if (g.desc.empty() || g.desc == "undefined" || g.desc == g.name) return "pg" + g.name;
  return fmt::format("pg{}.{}", g.name, g.desc);
}

// The program operation a record becomes; nullopt for those programs have no counterpart of.
std::optional<program::OpType> op_type(traces::FrKind k) {
  using traces::FrKind;
  switch (k) {
    case FrKind::send: return program::OpType::send;
    case FrKind::recv: return program::OpType::recv;
    case FrKind::broadcast:
    case FrKind::broadcast_oop: return program::OpType::broadcast;
    case FrKind::all_reduce:
    case FrKind::all_reduce_barrier:
    case FrKind::allreduce_coalesced:
    case FrKind::barrier:
    // Programs have no reduce_scatter, reduce, gather or scatter: each runs as an all_reduce of what
    // every member holds alike (a scatter's output, the others' input), which pairs with its
    // members' in the same order and compares the same size (add_assumptions says so).
    case FrKind::gather:
    case FrKind::scatter:
    case FrKind::reduce:
    case FrKind::reduce_oop:
    case FrKind::reduce_scatter:
    case FrKind::reduce_scatter_base:
    case FrKind::reduce_scatter_tensor_coalesced: return program::OpType::all_reduce;
    case FrKind::all_gather:
    case FrKind::all_gather_base:
    case FrKind::all_gather_into_tensor_coalesced: return program::OpType::all_gather;
    case FrKind::all_to_all: return program::OpType::all_to_all;
    default: return std::nullopt;
  }
}

// Every FrOp of the job by its rank and its place in that rank's record order.
using OpIndex = std::map<int, std::vector<const FrOp*>>;

OpIndex index_ops(const FrJob& job) {
  OpIndex index;
  for (const auto& [rank, dump] : job.by_rank) index[rank].assign(dump->entries.size(), nullptr);
  auto add = [&index](const FrOp& op) {
    std::vector<const FrOp*>& ops = index.at(op.dump->rank);
    PPSPEC_ASSERT(op.order < ops.size() && ops[op.order] == nullptr, "record {} of rank {} indexed twice", op.order,
                  op.dump->rank);
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
    const auto it = std::find_if(g.lanes[m].begin(), g.lanes[m].end(),
                                 [seq](const FrOp& op) { return op.entry->collective_seq_id == seq; });
    if (it == g.lanes[m].end()) return "";
    const std::vector<std::string> frames = verify::user_frames(*it->entry, 1);
    if (frames.empty() || (site && *site != frames[0])) return "";
    site = frames[0];
  }
  return site.value_or("");
}

// The records that coalesce several tensors of one kind into one call (_coalescing_manager's fast
// path): one program operation per tensor, in a group.
bool fused(const FrEntry& e) {
  return e.kind == traces::FrKind::allreduce_coalesced || e.kind == traces::FrKind::all_gather_into_tensor_coalesced ||
         e.kind == traces::FrKind::reduce_scatter_tensor_coalesced;
}

// A kind programs have no counterpart of, which runs as an all_reduce of its input.
bool runs_as_all_reduce(traces::FrKind k) {
  using traces::FrKind;
  return k == FrKind::reduce || k == FrKind::reduce_oop || k == FrKind::reduce_scatter ||
         k == FrKind::reduce_scatter_base || k == FrKind::reduce_scatter_tensor_coalesced || k == FrKind::gather ||
         k == FrKind::scatter;
}

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (const int64_t d : dims) n *= d;
  return n;
}

int64_t elements(const FrEntry& e, size_t tensor, const std::string& file) {
  // all_to_all's list form records a tensor per peer: the program's all_to_all moves their total,
  // in equal chunks.
  if (e.kind == traces::FrKind::all_to_all && e.input_sizes.size() > 1) {
    for (const auto& t : e.input_sizes)
      if (t != e.input_sizes.front())
        throw core::InputError(
            file, 0,
            fmt::format("record {}: an all_to_all of uneven splits (a tensor per peer, of different sizes): a "
                        "program's all_to_all moves one count between every pair",
                        e.record_id));
    return verify::all_to_all_totals(e).first;
  }
  // A scatter's input is the root's list; what every member holds alike is its output.
  if (e.kind == traces::FrKind::scatter && e.output_sizes.size() == 1) return numel(e.output_sizes.front());
  if (e.input_sizes.size() > 1 && !fused(e))
    throw core::InputError(file, 0,
                           fmt::format("record {}: {} carries {} tensors; a program scenario's operation carries one",
                                       e.record_id, e.profiling_name, e.input_sizes.size()));
  return tensor < e.input_sizes.size() ? numel(e.input_sizes[tensor]) : 0;
}

// One record of a call as a program operation: the call's own, or a member of its coalesced group
// (`member`: its place in the group, the root of an uneven all_gather's broadcast).
program::ProgramOp op_of(const FrOp& fr, const FrEntry& e, size_t member, const FrJob& job, size_t tensor = 0) {
  const std::string& file = fr.dump->file;
  const std::optional<program::OpType> type = op_type(e.kind);
  if (!type)
    throw core::InputError(
        file, 0,
        fmt::format(
            "record {}: {} has no counterpart in program scenarios (they have send, recv, "
            "broadcast, all_reduce, all_gather, all_to_all; reduce, reduce_scatter, gather, scatter as an all_reduce)",
            e.record_id, e.profiling_name));
  const FrJobGroup& g = job.groups[fr.group];
  program::ProgramOp op;
  op.type = *type;
  op.comm = comm_name(g);
  const std::string torch = tensor < e.input_dtypes.size() ? e.input_dtypes[tensor] : "Byte";
  const std::optional<core::Dtype> dtype = traces::parse_torch_dtype(torch);
  if (!dtype)
    throw core::InputError(file, 0,
                           fmt::format("record {}: dtype {} has no counterpart in ppspec", e.record_id, torch));
  op.dtype = *dtype;
  op.count = elements(e, tensor, file);
  if (program::is_p2p_op(op.type)) op.peer = e.peer;
  if (op.type == program::OpType::broadcast)
    op.peer = e.kind == traces::FrKind::broadcast_oop && member < g.ranks.size() ? g.ranks[member] : g.ranks.front();
  if (!program::is_p2p_op(op.type) && !fr.composite()) op.label = agreed_call_site(g, e.collective_seq_id);
  op.origin = fmt::format("{} record {}", file, e.record_id);
  op.note = fmt::format("{}: {} ({}{}{})", verify::origin_of(fr), verify::describe(e), traces::to_string(fr.state),
                        e.thread.empty() ? "" : ", thread ", e.thread);
  return op;
}

// An all_to_all of uneven splits: its members' totals differ, and a program's all_to_all moves one
// count between every pair.
void refuse_uneven_all_to_all(const FrOp& fr, const FrJob& job) {
  if (fr.entry->kind != traces::FrKind::all_to_all) return;
  const FrJobGroup& g = job.groups[fr.group];
  const auto mine = verify::all_to_all_totals(*fr.entry);
  for (const auto& lane : g.lanes)
    for (const FrOp& other : lane)
      if (other.entry->collective_seq_id == fr.entry->collective_seq_id &&
          verify::all_to_all_totals(*other.entry) != mine)
        throw core::InputError(
            fr.dump->file, 0,
            fmt::format("record {}: an all_to_all of uneven splits (rank {} sends {}, rank {} {}): its "
                        "per-peer sizes are not in the dumps, and a program's all_to_all moves one "
                        "count between every pair",
                        fr.entry->record_id, fr.dump->rank, mine.first, other.dump->rank,
                        verify::all_to_all_totals(*other.entry).first));
}

program::ProgramOp bare(program::OpType type, const std::string& stream = "") {
  program::ProgramOp op;
  op.type = type;
  op.stream = stream;
  return op;
}

// A rank's streams by name: "s0", "s1", ... as placed, or the names the input recorded.
class StreamNames {
 public:
  explicit StreamNames(bool recorded) : recorded_(recorded) {}
  // The recorded stream of an entry (a ppspec trace exported as dumps names the stream an operation
  // ran on, "rank0.s1", as its thread), as an index of this rank's; nullopt when streams are placed.
  std::optional<size_t> recorded(const FrEntry& e, const std::string& file) {
    if (!recorded_) return std::nullopt;
    const size_t dot = e.thread.find('.'), space = e.thread.find(' ');
    const std::string name =
        dot == std::string::npos
            ? ""
            : e.thread.substr(dot + 1, space == std::string::npos ? std::string::npos : space - dot - 1);
    if (name.empty())
      throw core::InputError(file, 0, fmt::format("record {}: no stream recorded ('{}')", e.record_id, e.thread));
    const auto it = std::find(names_.begin(), names_.end(), name);
    if (it != names_.end()) return static_cast<size_t>(it - names_.begin());
    if (names_.size() == verify::kFrStreamsMax)
      throw core::InputError(file, 0, fmt::format("more than {} streams on one rank", verify::kFrStreamsMax));
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
                                 const ImportOptions& options, Imported& out) {
  program::ThreadProgram t;
  std::set<size_t> used;
  bool in_group = false;
  verify::FrStreams streams(options.calls, dump.file);
  StreamNames names(options.recorded_streams);
  size_t events = 0;
  for (size_t i = 0; i < dump.entries.size(); ++i) {
    const FrOp* fr = ops[i];
    if (fr == nullptr) {
      // A closer of p2p ends the group its members opened; a coalesced collective's member is
      // posted with its closer's call, below.
      if (traces::is_closer(dump.entries[i].kind) && in_group) t.ops.push_back(bare(program::OpType::group_end));
      if (traces::is_closer(dump.entries[i].kind)) in_group = false;
      continue;
    }
    refuse_uneven_all_to_all(*fr, job);
    const verify::FrPlacement at = streams.place(*fr, names.recorded(*fr->entry, dump.file));
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
    const std::vector<const FrEntry*> records =
        fr->composite() ? std::vector<const FrEntry*>{} : std::vector<const FrEntry*>{fr->entry};
    for (size_t m : fr->members) {
      program::ProgramOp op = op_of(*fr, dump.entries.at(m), static_cast<size_t>(&m - fr->members.data()), job);
      op.stream = names.name(at.stream);
      t.ops.push_back(std::move(op));
      ++out.operations;
    }
    for (const FrEntry* e : records) {
      const size_t tensors = fused(*e) ? e->input_sizes.size() : 1;
      if (tensors > 1 && !in_group) t.ops.push_back(bare(program::OpType::group_start));
      for (size_t k = 0; k < tensors; ++k) {
        program::ProgramOp op = op_of(*fr, *e, 0, job, k);
        op.stream = names.name(at.stream);
        t.ops.push_back(std::move(op));
        ++out.operations;
      }
      if (tensors > 1 && !in_group) t.ops.push_back(bare(program::OpType::group_end));
    }
    used.insert(at.stream);
    if (fr->composite()) {  // its members are one call: closed here
      t.ops.push_back(bare(program::OpType::group_end));
      in_group = false;
    }
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
      "one host thread per rank, calling in record order: the order NCCL received the calls, whichever thread made "
      "them "
      "(each operation's comment names its thread)");
  if (options.recorded_streams)
    out.notes.push_back(
        "streams: each call on the stream the trace recorded; it also waits for every call recorded before it on "
        "another "
        "stream (as one without async_op does) except those the trace shows it overlapped, through an event");
  else
    out.notes.push_back(
        "streams: " + verify::fr_calls_words(options.calls) +
        "; a call that did not wait goes on another stream, after an event of each stream it did wait for");
  out.notes.push_back("every communicator connects its members when it is created (runtime_connect = false)");
  const bool broadcasts = std::any_of(index.begin(), index.end(), [](const auto& kv) {
    return std::any_of(kv.second.begin(), kv.second.end(), [](const FrOp* op) {
      return op != nullptr && (op->entry->kind == traces::FrKind::broadcast || op->composite());
    });
  });
  if (broadcasts)
    out.notes.push_back(
        "broadcast roots are not in Flight Recorder dumps: each broadcast's root is its group's first member");
  const bool reductions = std::any_of(index.begin(), index.end(), [](const auto& kv) {
    return std::any_of(kv.second.begin(), kv.second.end(),
                       [](const FrOp* op) { return op != nullptr && runs_as_all_reduce(op->entry->kind); });
  });
  if (reductions)
    out.notes.push_back(
        "each reduce_scatter, reduce, gather and scatter runs as an all_reduce of what every member holds alike "
        "(programs have none of them; it pairs and compares sizes alike)");
}

void refuse_dropped_records(const FrJob& job) {
  for (const auto& [rank, dropped] : job.dropped) {
    if (dropped <= 0) continue;
    throw core::InputError(
        job.by_rank.at(rank)->file, 0,
        fmt::format("rank {}'s ring buffer dropped its first {} records: a scenario needs every operation "
                    "from the start (raise TORCH_FR_BUFFER_SIZE and dump again)",
                    rank, dropped));
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
                      std::any_of(job.channels.begin(), job.channels.end(),
                                  [&](const verify::FrChannel& c) { return &job.groups[c.group] == &g; });
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
      p.ranks[static_cast<size_t>(r)].push_back(thread_of(*it->second, index.at(r), job, options, out));
      continue;
    }
    p.ranks[static_cast<size_t>(r)].push_back(program::ThreadProgram{});
    out.notes.push_back(fmt::format("rank {} left no dump: it posts nothing in the scenario", r));
  }
  p.streams = out.stream_names.empty() ? std::vector<std::string>{"s0"} : out.stream_names;
  if (!options.recorded_streams)
    std::sort(p.streams.begin(), p.streams.end(), [](const std::string& a, const std::string& b) {
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
