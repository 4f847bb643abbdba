// The plugin's state in one process: a table of the communicators NCCL initialised, each with a
// pool of operation slots (the handles NCCL holds) and a ring of records; a process-wide pool of
// captured operations (a graph's operations live as long as the graph) and of group handles; one
// flusher thread that drains the rings, in record order, into a trace per rank and, when a watcher
// listens, onto its socket. NCCL's threads only ever take a slot and append to a ring: no lock, no
// allocation, no I/O. Every table is bounded; what does not fit is counted, written into the
// trace, and makes the readers refuse to call the trace complete.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "watch/nccl_profiler/record.h"
#include "watch/nccl_profiler/ring.h"

namespace ppspec::nccl_profiler {

inline constexpr size_t kRingRecords = 2048;     // per communicator: the flusher drains every 2 ms
inline constexpr size_t kOpsInFlight = 1024;     // per communicator: operations posted and not yet completed
inline constexpr size_t kCapturedOps = 1 << 16;  // per process: operations captured into CUDA graphs
inline constexpr size_t kGroupHandles = 1024;    // per process: ncclGroupStart..End open at once, on all threads
inline constexpr size_t kCommsMax = 256;
inline constexpr size_t kStreamsMax = 1024;
inline constexpr size_t kOutputsMax = 64;  // ranks one process records (more than one only when a harness drives it)
inline constexpr int kCommNameBytes = 64;
inline constexpr int kPluginVersion = 1;  // of the per-rank trace format (watch/nccl_profiler/README.md)

// What a handle NCCL holds stands for: the first field of every handle, so that stopEvent can tell.
enum class HandleKind : uint8_t { group_api, coll_api, p2p_api, captured_api, task, kernel_channel };

struct Comm;
struct OpSlot;
struct CapturedOp;

struct Handle {
  HandleKind kind = HandleKind::coll_api;
  OpSlot* slot = nullptr;          // coll_api, p2p_api, task, kernel_channel
  CapturedOp* captured = nullptr;  // captured_api
  int32_t group = -1;      // group_api: its number (a user group's or a capturing one's); -1 for NCCL's implicit group
  Comm* comm = nullptr;    // group_api: the communicator of its first call
  bool capturing = false;  // group_api: its calls are captured into a CUDA graph
};

// One operation between its API call and its completion. NCCL keeps the API handle after stopping
// it (a task's parent), so a slot lives until the pool comes round to it again.
struct OpSlot {
  Handle api{HandleKind::coll_api, this, nullptr, -1};
  Handle task{HandleKind::task, this, nullptr, -1};
  Handle channel{HandleKind::kernel_channel, this, nullptr, -1};
  Comm* comm = nullptr;
  Record posted{};               // the operation as posted (a p2p's peer filled in by its task)
  std::atomic<int> channels{0};  // the kernel channels its task runs on
  std::atomic<int> channels_started{0};
  std::atomic<int> channels_done{0};
  std::atomic<bool> open{false};  // posted and not yet completed
};

// An operation captured into a CUDA graph: every replay's task names this as its parent.
struct CapturedOp {
  Handle api{HandleKind::captured_api, nullptr, this, -1};
  Comm* comm = nullptr;
  Record captured{};
};

struct Comm {
  uint64_t hash = 0;
  int rank = -1, ranks = 0;
  int global_rank = -1;  // the process's rank (PPSPEC_RANK, RANK, ...), -1 when no variable says
  int interface = 0;     // the profiler interface NCCL loaded the plugin by: 5 or 6
  char name[kCommNameBytes] = {};
  int64_t init_ns = 0;
  std::atomic<uint64_t> next_op{0};
  std::atomic<uint64_t> lost{0};  // records the ring had no room for, slots reused while open, captures beyond the pool
  std::array<OpSlot, kOpsInFlight> slots{};
  Ring<Record, kRingRecords> ring;
};

class Output;

class Recorder {
 public:
  static Recorder& instance();

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // Whether kernel channels are recorded: an operation's start and completion. PPSPEC_PROFILER_EVENTS=calls
  // turns them off, and NCCL's own instrumentation of its kernels with them: misalignments only.
  bool completions() const { return completions_; }
  // Turns the plugin off for the rest of the process, saying why on stderr once.
  void disable(const char* why);

  Comm* init_comm(uint64_t hash, const char* name, int ranks, int rank, int global_rank);
  void finalize_comm(Comm& c);
  // A new slot for an operation of `c`, its record's `op` set; reuses the oldest.
  OpSlot& take_slot(Comm& c);
  // A captured operation's place; nullptr (and a lost record) when the process captured too many.
  CapturedOp* take_captured(Comm& c);
  Handle* take_group(Comm& c, bool user_group, bool capturing);
  // Numbers the record in process order and queues it for the flusher.
  void append(Comm& c, Record& r);
  uint32_t stream_number(const void* stream);
  int64_t now_ns() const;
  // Writes everything appended so far (the flusher does so every few milliseconds).
  void flush();
  // For harnesses that drive the plugin (the simulator's adapter): their clock instead of the wall's.
  void set_clock(int64_t (*clock)()) { clock_.store(clock, std::memory_order_relaxed); }
  // For harnesses only, while nothing calls the plugin: begin_job forgets every communicator and
  // records the next job into `dir` (no flusher thread then: the harness flushes); end_job writes
  // every trace's trailer and closes it.
  void begin_job(const std::string& dir);
  void end_job();

 private:
  Recorder() = default;
  void start();
  void flusher_loop();
  void drain_locked();
  Output* output_for(int global_rank);
  void finish();
  void end_outputs();
  void forget_comms();

  std::atomic<bool> enabled_{true};
  bool completions_ = true;  // set once, at the first init, before any callback reads it
  std::atomic<bool> said_disabled_{false};
  std::atomic<int64_t (*)()> clock_{nullptr};
  std::atomic<uint64_t> next_sequence_{0};
  std::array<std::atomic<Comm*>, kCommsMax> comms_{};
  std::atomic<size_t> comm_count_{0};
  std::array<std::atomic<const void*>, kStreamsMax> streams_{};
  std::unique_ptr<CapturedOp[]> captured_;  // made at the first communicator's init, never freed
  std::atomic<size_t> captured_count_{0};
  std::array<Handle, kGroupHandles> groups_{};
  std::atomic<uint64_t> group_count_{0};
  std::mutex flush_mutex_;  // the flusher's and flush()'s, never a callback's
  std::vector<Output*> outputs_;
  std::vector<Record> batch_;           // one drain's records, sorted by sequence before they are written
  std::vector<bool> init_written_;      // [comm]
  std::vector<uint64_t> lost_written_;  // [comm]
  std::string dir_, watch_address_;
  std::thread flusher_;
  std::atomic<bool> stopping_{false};
  std::once_flag started_;
};

}  // namespace ppspec::nccl_profiler
