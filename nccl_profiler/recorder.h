// The plugin's state in one process: a table of the communicators NCCL initialised, each with a
// pool of operation slots (the handles NCCL holds) and a ring of records, and one flusher thread
// that drains the rings into a trace file per rank. NCCL's threads only ever take a slot and
// append to a ring: no lock, no allocation, no I/O. Every table is bounded; what does not fit is
// counted, written into the trace, and makes the readers refuse to call the trace complete.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl_profiler/record.h"
#include "nccl_profiler/ring.h"

namespace ppspec::nccl_profiler {

inline constexpr size_t kRingRecords = 4096;  // per communicator: the flusher drains every few milliseconds
inline constexpr size_t kOpsInFlight = 1024;  // per communicator: operations posted and not yet completed
inline constexpr size_t kCommsMax = 256;
inline constexpr size_t kStreamsMax = 1024;
inline constexpr size_t kOutputsMax = 64;     // ranks one process records (more than one only when a harness drives it)
inline constexpr int kCommNameBytes = 64;
inline constexpr int kPluginVersion = 1;      // of the per-rank trace format (nccl_profiler/README: the lines)

// What a handle NCCL holds stands for: the first field of every handle, so that stopEvent can tell.
enum class HandleKind : uint8_t { coll_api, p2p_api, task, kernel_channel };

struct Comm;
struct OpSlot;

struct Handle {
  HandleKind kind;
  OpSlot* slot;
};

// One operation between its API call and its completion. NCCL keeps the API handle after
// stopping it (a task's parent), so a slot lives until the pool comes round to it again.
struct OpSlot {
  Handle api{HandleKind::coll_api, this};
  Handle task{HandleKind::task, this};
  Handle channel{HandleKind::kernel_channel, this};
  Comm* comm = nullptr;
  Record posted{};                       // a p2p's call, held until its task names the peer
  std::atomic<int> channels{0};          // the kernel channels its task runs on
  std::atomic<int> channels_done{0};
  std::atomic<bool> open{false};         // posted and not yet completed
};

struct Comm {
  uint64_t hash = 0;
  int rank = -1, ranks = 0;
  int global_rank = -1;  // the process's rank (PPSPEC_RANK, RANK, ...), -1 when no variable says
  char name[kCommNameBytes] = {};
  int64_t init_ns = 0;
  std::atomic<uint64_t> next_op{0};
  std::atomic<uint64_t> lost{0};          // records the ring had no room for, and slots reused while open
  std::atomic<bool> finalized{false};
  std::array<OpSlot, kOpsInFlight> slots{};
  Ring<Record, kRingRecords> ring;
};

class Recorder {
 public:
  static Recorder& instance();

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // Turns the plugin off for the rest of the process, saying why on stderr once.
  void disable(const char* why);

  Comm* init_comm(uint64_t hash, const char* name, int ranks, int rank);
  void finalize_comm(Comm& c);
  // A new slot for an operation of `c` (its record's `op` set); reuses the oldest.
  OpSlot& take_slot(Comm& c);
  void append(Comm& c, const Record& r);
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
  struct Output;
  void start_flusher();
  void flusher_loop();
  void drain_locked();
  Output* output_for(int global_rank);
  void write_comm_init(Output& out, const Comm& c);
  void finish();
  void end_outputs();

  std::atomic<bool> enabled_{true};
  std::atomic<bool> said_disabled_{false};
  std::atomic<int64_t (*)()> clock_{nullptr};
  std::array<std::atomic<Comm*>, kCommsMax> comms_{};
  std::atomic<size_t> comm_count_{0};
  std::array<std::atomic<const void*>, kStreamsMax> streams_{};
  std::mutex flush_mutex_;  // the flusher's and flush()'s, never a callback's
  std::vector<Output*> outputs_;
  struct Written {  // what of a communicator the trace has: its comm_init line, its count of lost records
    bool init = false;
    uint64_t lost = 0;
  };
  std::vector<Written> written_;  // [comm]
  std::string dir_, abort_file_;
  std::thread flusher_;
  std::atomic<bool> stopping_{false};
  std::once_flag started_;
};

}  // namespace ppspec::nccl_profiler
