// The per-rank traces the NCCL profiler plugin writes (watch/nccl_profiler/README.md, "The trace"), read
// one line at a time, and a job's traces merged into one event stream of ppspec's schema:
// communicators named once for the job, every rank by its job rank, a send's peer and a
// broadcast's root turned from communicator ranks into job ranks, operations numbered for the job
// and placed on their communicator (cseq). A rank's lines go out in its own order; a line waits
// while what it needs is unknown (every member of its communicator, a send's or recv's peer, which
// NCCL names only at ncclGroupEnd), and the lines after it wait with it. Then every checker of a
// recorded trace runs on a live job.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/event.h"
#include "core/op.h"
#include "traces/op_numbers.h"

namespace ppspec::traces {

inline constexpr int kProfilerTraceVersion = 1;  // nccl_profiler::kPluginVersion

enum class ProfilerLineKind : uint8_t {
  header,
  comm_init,
  op_posted,
  op_peer,
  op_captured,
  op_started,
  op_completed,
  comm_finalized,
  group_ended,
  lost,
  trailer
};

struct ProfilerLine {
  ProfilerLineKind kind = ProfilerLineKind::header;
  int64_t t = 0;
  uint64_t comm = 0;  // the communicator's hash
  // header
  int rank = -1;
  std::string host;
  int64_t pid = 0;
  bool harness_clock = false;
  bool completions = true;  // false: the plugin recorded calls only (PPSPEC_PROFILER_EVENTS=calls)
  // comm_init
  std::string name;
  int ranks = 0;
  int comm_rank = -1;
  int interface = 0;
  // operations
  uint64_t op = 0;
  std::optional<core::OpKind> kind_of_op;  // empty: an operation ppspec has no kind for
  core::Dtype dtype = core::Dtype::u8;
  int64_t count = 0;
  int peer = -1;  // communicator rank: a p2p's peer, or a rooted collective's root
  uint32_t stream = 0;
  int64_t group = -1;
  std::optional<uint64_t> replay_of;  // op_posted of a graph replay: the op_captured it re-issues
  std::string site;
  // lost, trailer
  uint64_t lost = 0;
  bool disabled = false;
};

// One line of a per-rank trace. Throws core::InputError naming `where` and `line`; a header or a
// trailer of another version says which, and that the ppspec that came with the plugin reads it.
ProfilerLine parse_profiler_line(const std::string& text, const std::string& where, int line);
// Whether a file's first line is a profiler trace's header (of any version).
bool is_profiler_trace(const std::string& path);

class ProfilerJob {
 public:
  explicit ProfilerJob(core::EventSink& sink) : sink_(sink) {}

  // A per-rank trace; its lines then come through add_line, the header first.
  size_t add_source(std::string where);
  // Throws core::InputError for a line that is not what the format says, or that contradicts the
  // lines before it (an operation completed that was never posted, a rank traced twice, ...); the
  // job is as it was before the line then.
  void add_line(size_t source, const std::string& text);
  const std::string& where(size_t source) const { return sources_.at(source).where; }

  struct Counts {
    uint64_t sources = 0, ended = 0, disabled = 0;  // traces; with their trailer; whose plugin turned itself off
    uint64_t comms = 0, posted = 0, completed = 0, captured = 0, lost = 0;
    uint64_t unmodelled = 0;  // operations of a kind ppspec does not model: counted, not checked
    uint64_t held = 0;        // lines waiting for a peer or a member (see held())
    uint64_t calls_only = 0;  // traces whose plugin recorded no completions: their operations are taken as completed
    uint64_t self_exchanges =
        0;  // sends to oneself and their receives: taken as completed (NCCL tells no kernel of them)
  };
  const Counts& counts() const { return counts_; }
  // Operations posted and not completed, oldest first.
  struct Open {
    core::RankId rank;
    std::string comm, actor, what, site;
    int64_t op_id, cseq;
    core::Time posted;
    bool started;
  };
  std::vector<Open> open_ops() const;
  // Per rank whose lines wait: the first that waits and why (a send or recv NCCL never built, so
  // its peer is unknown; a peer or root that never initialised the communicator).
  struct Held {
    core::RankId rank;
    std::string comm, what, site, why;
    size_t lines;  // that wait behind it too, itself included
  };
  std::vector<Held> held() const;
  core::Time last_time() const { return last_t_; }
  // Every rank traced: job rank -> where.
  std::map<core::RankId, std::string> ranks() const;
  // Ranks whose trace has not (yet) ended with its trailer, ascending: a process killed, a file cut,
  // or, while a job runs, a rank still running.
  std::vector<core::RankId> ranks_without_trailer() const;

 private:
  struct Source {
    std::string where;
    int line = 0;
    int rank = -1;
    bool has_header = false, ended = false;
    bool completions = true;
    std::map<uint64_t, int> comm_rank;  // hash -> this rank's place in it
    std::deque<ProfilerLine> held;      // in the rank's order
    uint64_t held_released = 0;         // lines that left `held`: the front is line number held_released
    // The operations with lines in `held`, by (comm, op): each line's lookup is one search, not a
    // scan of every line that waits (a job whose sends NCCL never built holds millions).
    struct HeldOp {
      std::optional<uint64_t> posted;           // its op_posted line's number while held (see held_released)
      int lines = 0;                            // its lines in `held`
      bool started = false, completed = false;  // a start or a completion among them
    };
    std::map<std::pair<uint64_t, uint64_t>, HeldOp> held_ops;
    std::map<int64_t, ProfilerLine>
        capturing;      // groups that captured calls, until their ncclGroupEnd returns: the first call
    struct Replaying {  // the replay of a captured group going out: its group number, the captured calls seen
      int64_t number = -1;
      std::set<uint64_t> seen;
    };
    std::map<std::pair<uint64_t, int64_t>, Replaying> replaying;  // (comm, captured group)
  };
  struct Comm {
    std::string name;
    int ranks = 0;
    std::map<int, core::RankId> members;                             // communicator rank -> job rank
    std::map<core::RankId, int64_t> collectives;                     // job rank -> collectives posted
    std::map<std::pair<core::RankId, core::RankId>, int64_t> sends;  // (src, dst) -> sends posted
    std::map<std::pair<core::RankId, core::RankId>, int64_t> recvs;  // (src, dst) -> recvs posted
  };
  struct Posted {
    core::RankId rank;
    uint64_t comm;
    core::OpDesc desc;
    std::string actor, site;
    int64_t op_id, cseq;
    core::Time t;
    bool started = false;
  };
  using OpKey = std::tuple<size_t, uint64_t, uint64_t>;  // (source, comm, op)

  void check_line(const Source& s, size_t source, const ProfilerLine& l) const;
  void on_header(Source& s, const ProfilerLine& l);
  void on_comm_init(size_t source, const ProfilerLine& l);
  void on_peer(Source& s, const ProfilerLine& l);
  bool ready(const ProfilerLine& l) const;
  void hold(Source& s, const ProfilerLine& l);
  void release(size_t source);
  void release_all();
  void apply(size_t source, const ProfilerLine& l);
  void post(size_t source, const ProfilerLine& l);
  void progress(size_t source, const ProfilerLine& l);
  int64_t replay_group(Source& s, const ProfilerLine& l);
  static constexpr int64_t kReplayGroups = int64_t{1} << 40;  // replays' group numbers, apart from the plugin's
  core::Time rebase(int64_t t);
  void publish(core::Event& e);

  core::EventSink& sink_;
  std::vector<Source> sources_;
  std::map<uint64_t, Comm> comms_;
  std::map<std::string, uint64_t> names_;  // display name -> hash
  std::map<OpKey, Posted> open_;
  std::set<OpKey> unmodelled_, captured_;
  std::map<std::pair<size_t, uint64_t>, OpNumbers> numbers_;  // (source, comm): the op numbers used, for duplicates
  std::map<std::pair<size_t, uint64_t>, uint64_t> lost_;      // (source, comm) -> records lost so far
  std::map<core::RankId, size_t> rank_source_;
  Counts counts_;
  int64_t next_op_id_ = 0;
  int64_t next_replay_group_ = 0;
  uint64_t next_seq_ = 0;
  std::optional<int64_t> base_t_;
  core::Time last_t_ = 0;
};

}  // namespace ppspec::traces
