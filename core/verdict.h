// Verdicts (DESIGN §7) and the findings that justify them. A report is for a person: what broke,
// where (rank, stream, step, label), the first bad event, and how to reproduce it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding_kind.h"
#include "core/blame.h"
#include "core/op_fields.h"
#include "core/types.h"

namespace ppspec::core {

enum class Verdict : uint8_t {
  pass,
  fifo_misalignment,
  deadlock,
  hazard,
  stale_draft,
  padding_violation,
  embedding_violation,
  output_divergence,
  nondeterminism,
  step_limit,
  hang,
  invalid_usage,     // what CUDA or NCCL itself rejects at run time (e.g. a capture-unsafe call during a capture)
  device_fault,      // GPUs only: a kernel faulted (illegal address): CUDA's sticky error ends the process's GPU work
  race,              // two accesses to the same bytes, one a write, with no happens-before between them
  stage_divergence,  // pipeline stages disagree on what they embed for a request at a step
  kv_violation,      // a kernel stored (or read) a request's KV through a block it does not own, or through none
  leak,              // a request that ended still holds KV blocks, its state, or its place in the batch
  pipeline_bubble,   // a rank posts (and waits for) feedback that no request of the step needs
};

std::string_view to_string(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view s);
std::string_view verdict_names();

// The most entries a finding lists in any one list (the fibers of a wait chain, the other stuck
// fibers, sites, graph nodes, the members of a collective); the rest are counted on one "… and N
// more" line. A report is read by a person: a world of 1,000 stuck fibers must not print a line
// per fiber, let alone per pair.
inline constexpr size_t kFindingListMax = 16;

// What a finding blames, in fields a program can compare (`ppspec check` of exported dumps against
// the simulator's own verdict): the rank whose operation is the root cause, and that operation by
// communicator and position. Filled where the evidence names one rank; rank -1 otherwise.
struct Culprit {
  RankId rank = -1;
  std::string comm;  // the communicator (a Flight Recorder process group: its name)
  bool p2p = false;
  RankId peer = -1;          // p2p: the other side
  int64_t position = -1;     // 0-based: the communicator's collective number, or the k-th op on the (src, dst) channel
  Blame what = Blame::none;  // how it is to blame (core/blame.h)
};

// One place in the system a finding points at.
// What a deadlocked site waits in, for programs that judge a deadlock by where its threads are held
// (`fidelity`: a host call a dump cannot see, a first-contact setup), never by its words.
enum class SiteWait : uint8_t {
  none,                  // not a blocked host thread, or nothing known
  stream_sync,           // a host in cudaStreamSynchronize
  launch_queue,          // a host launching onto a full stream
  event_sync,            // a host in cudaEventSynchronize
  module_load,           // a host loading a module (R8)
  device_drain,          // a host in a device-wide drain: device sync, malloc (R8)
  context_lock,          // a host waiting for a device's context lock
  connect,               // a host in NCCL's first-contact setup (R1)
  comm_init,             // a host in communicator init (R1)
  channel,               // a host receiving from a host channel
  counterpart_unposted,  // an operation whose counterpart its peer has not posted (recorded dumps)
};

struct Site {
  RankId rank = -1;
  std::string actor;  // host thread or stream, e.g. "rank0.side"
  std::string comm;
  int64_t cseq = -1;
  std::string what;    // the operation or call, in words
  std::string origin;  // where the program says so, e.g. "lazy_load.toml:31"
  SiteWait wait = SiteWait::none;
};

// A site as a report's "where" names it: "rank2.side on pp_broadcast0 #3", "engine (the engine
// core's scheduler)", with its origin in brackets; empty for a site with no actor.
std::string site_words(const Site& site);

struct Finding {
  Verdict verdict = Verdict::pass;
  FindingKind kind = FindingKind::none;  // finer than the verdict (core/finding_kind.h)
  Time time = 0;                         // virtual time of the first bad event
  uint64_t sched_step = 0;
  int64_t engine_step = -1;          // the serving engine's step, for findings about serving (-1: none)
  int64_t request = -1;              // the request it is about, for findings about one (-1: none, or not one)
  std::string summary;               // one line
  std::vector<Site> sites;           // every party involved, the first one first
  std::vector<std::string> details;  // further lines (the wait-for cycle, ...)
  std::string dot;                   // Graphviz, for deadlocks
  Culprit culprit{};
  // fifo-misalignment: which fields of the mismatched pair differ (the pair its summary names).
  OpFields mismatched{};

  bool involves_rank(RankId r) const;
};

// A note (verdict pass) of a reader that has no time of its own to give (dumps, merged traces).
Finding untimed_note(FindingKind kind, std::string summary);

struct RunStats {
  uint64_t sched_steps = 0;  // scheduling decisions
  Time sim_time = 0;         // virtual time at the end
  uint64_t events = 0;
  uint64_t ops_posted = 0;
  uint64_t pairs = 0;  // positional pairings formed (p2p pairs + collective slots; Flight Recorder: p2p pairs)
  uint64_t collective_slots = 0;  // Flight Recorder: positions of collectives compared across their members
  uint64_t fibers = 0;
};

struct RunResult {
  Verdict verdict = Verdict::pass;
  std::vector<Finding> findings;  // what decided the verdict, earliest first
  std::vector<Finding> notes;     // hazards and diagnostics that did not decide it
  RunStats stats;
  std::vector<uint32_t> decisions;  // fiber chosen at each contested scheduling point (for replay)
};

}  // namespace ppspec::core
