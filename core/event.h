// The event schema (DESIGN §7): what the runtime and, later, the engine report as they run.
// Checkers subscribe to the stream, so the same checker works online (simulator, GPU) and offline
// on a recorded trace. One fixed struct keeps the hot path allocation-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "core/event_subjects.h"
#include "core/label.h"
#include "core/op.h"
#include "core/types.h"

namespace ppspec::core {

enum class EventKind : uint8_t {
  actor_start,
  actor_end,
  comm_init,        // a rank finished initialising a communicator (value = its number of members)
  op_posted,        // host enqueued a communication operation (value = the host thread's group it was posted in,
                    // numbered from 0 per thread; -1 outside ncclGroupStart..End)
  op_paired,        // the operation's positional partner(s) are known: all sides posted
  op_started,       // the communication kernel became resident and started spinning
  op_completed,     // the operation completed on its stream
  kernel_launched,  // host launched a compute kernel
  kernel_completed,
  module_load,  // a kernel module loaded (value = 1 when it was a JIT compile + load)
  sync_begin,   // host blocks in a synchronising call (text says which)
  sync_end,
  note,           // a hazard or another diagnostic that does not stop the run
  op_pending,     // hang dump: an operation posted and not completed (value = its age in ns)
  actor_blocked,  // hang dump: a host thread inside a call (text = the call, value = how long in ns)
  // Engine probes (DESIGN §7): `req` is the request id, `step` the engine step; their data (value,
  // ints, subject) is typed, one struct per kind, in core/probes.h, which is the layout's one place.
  batch_scheduled,    // engine core: a step's batch
  inputs_built,       // a rank built a request's input rows
  tokens_sampled,     // last stage: the request's sampled tokens this step
  drafts_proposed,    // last stage: the drafts proposed for the request's next step
  drafts_adopted,     // earlier stage: the drafts the deferred update wrote for the request
  warmup_phase,       // a worker enters a phase
  padding_rows,       // a kernel wrote a graph's padding rows
  gate,               // a rank evaluated the feedback gate of a step
  table_bound,        // a rank bound a weight table
  request_scheduled,  // engine core: a request in a step's batch
  feedback_adopted,   // earlier stage: what its deferred update read from the feedback of `step`
  stage_output,       // a rank's activations for a request's rows after its stage's layers
  blocks_allocated,   // engine core: KV blocks given to a request (its block table grows)
  blocks_freed,       // engine core: a request's KV blocks returned to the free pool
  request_released,   // engine core: a request ended or was preempted; its state index is free
  kv_slots,           // a rank: the KV slots its kernels store a request's rows through (read back)
  serving_ended,      // engine core: every request ended and every step in flight returned
  abort_arrived,      // engine core: a client's abort of a request reached it
  step_returned,      // engine core: a step's output reached it
  bonus_adopted,      // earlier stage: the bonus token its deferred update left in the request's row
  blocks_shared,      // engine core: cached KV blocks a request's prefill begins with, held read-only
  blocks_cached,      // engine core: a request's full KV blocks entered the prefix cache
  draft_budget,       // last stage: the draft budget a rank's drafter ran the step with (adaptive budget)
  accepted_readback,  // last stage, tp rank 0: the host read a step's accepted counts from pinned memory
  table_updated,      // earlier stage: every row of last_sampled after its deferred update of a step
  kv_exported,        // prefill engine core: a request's prompt KV is ready for the decode instance
  kv_sent,            // a prefill rank's connector: it sent a segment of a request's blocks (completed)
  kv_pulled,          // a decode rank's connector: it received a segment into a request's blocks (completed)
  kv_ready,           // decode engine core: every rank reported a request's pulls complete
  attention_split,    // a rank built a step's TRITON_MLA metadata: the batch split into decode and prefill paths
  eagle_taps,         // a rank's forward digested EAGLE taps: which tap from which of its layers
  engine_stalled,     // engine core: nothing in flight, nothing to arrive, and requests it will never schedule
  verdict,            // the run ended (text = verdict)
};

// How many kinds there are: `verdict` stays the last.
inline constexpr size_t kEventKinds = static_cast<size_t>(EventKind::verdict) + 1;

std::string_view to_string(EventKind k);
// Whether the serving engine publishes events of this kind (its probes), not the runtime.
bool is_engine_probe(EventKind k);

struct Event {
  Time t = 0;
  uint64_t seq = 0;  // assigned by the bus: position in the stream
  EventKind kind = EventKind::note;
  RankId rank = -1;
  std::string_view actor;  // host thread or stream, e.g. "rank0.side"
  std::string_view comm;
  int64_t op_id = -1;  // links posted/paired/started/completed of one operation
  int64_t cseq = -1;   // position on the communicator: collective slot or per-peer p2p index
  bool has_op = false;
  OpDesc op{};
  std::string_view kernel;
  std::string_view spec;
  std::string_view text;
  ProbeSubject subject{};  // the typed subject of the probes above that have one; the trace's "text"
  int64_t value = -1;
  int64_t req = -1;
  int64_t step = -1;
  // An engine probe's integers in its kind's layout: read them through core/probes.h, never by position.
  std::span<const int64_t> ints{};
};

// What a trace writes as "text": the typed subject's name for a probe that has one, else `text`.
std::string_view text_of(const Event& e);

// One JSON object, keys in a fixed order, no trailing newline. Deterministic byte for byte.
std::string to_json(const Event& e);

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_event(const Event& e) = 0;
};

class EventBus {
 public:
  void subscribe(EventSink* sink) { sinks_.push_back(sink); }
  // Producers check this first so that an unobserved run builds no events at all.
  bool active() const { return !sinks_.empty(); }
  void publish(Event& e) {
    e.seq = next_seq_++;
    for (EventSink* s : sinks_) s->on_event(e);
  }
  uint64_t published() const { return next_seq_; }

 private:
  std::vector<EventSink*> sinks_;
  uint64_t next_seq_ = 0;
};

// A pending report of a kernel, not of an operation: the real backend's watchdog reports a kernel
// that never finished (a persistent kernel, a launch queued behind one) as op_pending naming the
// kernel, with no communicator and no op.
inline bool is_pending_kernel(const Event& e) { return e.kind == EventKind::op_pending && !e.kernel.empty(); }

// Escapes `s` as a JSON string literal (with quotes) onto `out`.
void append_json_string(std::string& out, std::string_view s);

}  // namespace ppspec::core
