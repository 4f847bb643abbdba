// The per-rank traces the NCCL profiler plugin writes (nccl_profiler/trace_lines.h), read one line
// at a time, and a job's traces merged into one event stream of ppspec's schema: communicators
// named once for the job, every rank by its job rank, a send's peer and a broadcast's root turned
// from communicator ranks into job ranks (which needs every member's comm_init: the operations of
// a communicator wait until its members are known), operations numbered for the job and placed
// on their communicator (cseq). Then every checker of a recorded trace runs on a live job.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/op.h"

namespace ppspec::traces {

inline constexpr int kProfilerTraceVersion = 1;  // nccl_profiler::kPluginVersion

enum class ProfilerLineKind : uint8_t { header, comm_init, op_posted, op_completed, comm_finalized, lost, trailer };

struct ProfilerLine {
  ProfilerLineKind kind = ProfilerLineKind::header;
  int64_t t = 0;
  uint64_t comm = 0;  // the communicator's hash
  // header
  int rank = -1;
  std::string host;
  int64_t pid = 0;
  bool harness_clock = false;
  // comm_init
  std::string name;
  int ranks = 0;
  int comm_rank = -1;
  // op_posted, op_completed
  uint64_t op = 0;
  std::optional<core::OpKind> kind_of_op;  // empty: an operation ppspec has no kind for (gather, scatter)
  core::Dtype dtype = core::Dtype::u8;
  int64_t count = 0;
  int peer = -1;  // communicator rank
  uint32_t stream = 0;
  bool captured = false;
  std::string site;
  // lost, trailer
  uint64_t lost = 0;
  bool disabled = false;
};

// One line of a per-rank trace. Throws core::InputError naming `where` and `line`.
ProfilerLine parse_profiler_line(const std::string& text, const std::string& where, int line);
// Whether a file's first line is a profiler trace's header.
bool is_profiler_trace(const std::string& path);

class ProfilerJob {
 public:
  explicit ProfilerJob(core::EventSink& sink) : sink_(sink) {}

  // A per-rank trace; its lines then come through add_line, the header first.
  size_t add_source(std::string where);
  // Throws core::InputError for a line that is not what the format says, or that contradicts the
  // lines before it (an operation completed that was never posted, a rank traced twice, ...).
  void add_line(size_t source, const std::string& text);

  struct Counts {
    uint64_t sources = 0, ended = 0, disabled = 0;  // traces; with their trailer; whose plugin turned itself off
    uint64_t comms = 0, posted = 0, completed = 0, lost = 0;
    uint64_t unmodelled = 0;    // operations of a kind ppspec does not model: counted, not checked
    uint64_t waiting = 0;       // operations held until every member of their communicator is known
  };
  const Counts& counts() const { return counts_; }
  // Operations posted and not completed: (job rank, comm, description), oldest first.
  struct Open {
    core::RankId rank;
    std::string comm, actor, what, site;
    int64_t op_id, cseq;
    core::Time posted;
  };
  std::vector<Open> open_ops() const;
  core::Time last_time() const { return last_t_; }
  // The communicators some member has not initialised yet, in words.
  std::vector<std::string> incomplete_comms() const;

 private:
  struct Source {
    std::string where;
    int line = 0;
    int rank = -1;
    bool has_header = false, ended = false;
    std::map<uint64_t, int> comm_rank;  // hash -> this rank's place in it
  };
  struct Comm {
    std::string name;
    int ranks = 0;
    std::map<int, core::RankId> members;  // communicator rank -> job rank
    std::deque<std::pair<size_t, ProfilerLine>> waiting;  // (source, line) until the members are known
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
  };
  void on_header(Source& s, const ProfilerLine& l);
  void on_comm_init(size_t source, const ProfilerLine& l);
  void on_op(size_t source, const ProfilerLine& l);
  void post(Source& s, size_t source, Comm& c, const ProfilerLine& l);
  void complete(Source& s, size_t source, const ProfilerLine& l);
  core::Time rebase(int64_t t);
  void publish(core::Event& e);

  core::EventSink& sink_;
  std::vector<Source> sources_;
  std::map<uint64_t, Comm> comms_;
  std::map<std::string, uint64_t> names_;  // display name -> hash
  using OpKey = std::tuple<size_t, uint64_t, uint64_t>;  // (source, comm, op)
  std::map<OpKey, Posted> open_;
  std::set<OpKey> unmodelled_;
  std::map<std::pair<size_t, uint64_t>, uint64_t> lost_;  // (source, comm) -> records lost so far
  std::map<core::RankId, size_t> rank_source_;
  Counts counts_;
  int64_t next_op_id_ = 0;
  uint64_t next_seq_ = 0;
  std::optional<int64_t> base_t_;
  core::Time last_t_ = 0;
};

}  // namespace ppspec::traces
