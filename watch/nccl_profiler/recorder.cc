#include "watch/nccl_profiler/recorder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "watch/nccl_profiler/output.h"
#include "watch/nccl_profiler/trace_lines.h"

namespace ppspec::nccl_profiler {
namespace {

constexpr auto kFlushPeriod = std::chrono::milliseconds(2);
constexpr int kAbortPollTicks = 50;  // every 100 ms

bool usable_directory(const std::string& dir) {
  if (dir.empty()) return false;
  ::mkdir(dir.c_str(), 0777);  // it may exist already; access() says whether it is usable
  return ::access(dir.c_str(), W_OK | X_OK) == 0;
}

}  // namespace

Recorder& Recorder::instance() {
  // Never destroyed: NCCL may call in from its threads while the process exits.
  static Recorder* r = new Recorder();
  return *r;
}

void Recorder::disable(const char* why) {
  enabled_.store(false, std::memory_order_relaxed);
  if (!said_disabled_.exchange(true)) std::fprintf(stderr, "ppspec-nccl-profiler: disabled: %s\n", why);
}

int64_t Recorder::now_ns() const {
  if (auto clock = clock_.load(std::memory_order_relaxed)) return clock();
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);  // comparable across the nodes of a job, roughly
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Comm* Recorder::init_comm(uint64_t hash, const char* name, int ranks, int rank, int global_rank) {
  std::call_once(started_, [this] { start(); });
  if (!enabled()) return nullptr;
  const size_t index = comm_count_.fetch_add(1);
  if (index >= kCommsMax) {
    comm_count_.fetch_sub(1);
    std::fprintf(stderr, "ppspec-nccl-profiler: more than %zu communicators: communicator %016llx is not recorded\n",
                 kCommsMax, static_cast<unsigned long long>(hash));
    return nullptr;
  }
  auto* c = new Comm();
  c->hash = hash;
  c->ranks = ranks;
  c->rank = rank;
  c->global_rank = global_rank;
  std::snprintf(c->name, sizeof c->name, "%s", name != nullptr ? name : "");
  c->init_ns = now_ns();
  for (OpSlot& s : c->slots) s.comm = c;
  comms_[index].store(c, std::memory_order_release);
  return c;
}

void Recorder::finalize_comm(Comm& c) {
  Record r;
  r.kind = RecordKind::comm_finalized;
  append(c, r);
}

OpSlot& Recorder::take_slot(Comm& c) {
  const uint64_t op = c.next_op.fetch_add(1, std::memory_order_relaxed);
  OpSlot& s = c.slots[op % kOpsInFlight];
  // More operations in flight than the pool holds: the oldest one's completion can no longer be
  // told, and the trace says so (a lost record) rather than completing the wrong operation.
  if (s.open.exchange(true, std::memory_order_acq_rel)) c.lost.fetch_add(1, std::memory_order_relaxed);
  s.posted = Record{};
  s.posted.op = op;
  s.channels.store(0, std::memory_order_relaxed);
  s.channels_started.store(0, std::memory_order_relaxed);
  s.channels_done.store(0, std::memory_order_relaxed);
  return s;
}

CapturedOp* Recorder::take_captured(Comm& c) {
  const size_t index = captured_count_.fetch_add(1, std::memory_order_relaxed);
  if (index >= kCapturedOps) {
    c.lost.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  CapturedOp* op = &captured_[index];
  op->comm = &c;
  op->captured = Record{};
  op->captured.op = c.next_op.fetch_add(1, std::memory_order_relaxed);
  return op;
}

Handle* Recorder::take_group(Comm& c, bool user_group, bool capturing) {
  const uint64_t n = group_count_.fetch_add(1, std::memory_order_relaxed);
  Handle& h = groups_[n % kGroupHandles];
  h.kind = HandleKind::group_api;
  h.group = user_group || capturing ? static_cast<int32_t>(n % (uint64_t{1} << 30)) : -1;
  h.comm = &c;
  h.capturing = capturing;
  return &h;
}

void Recorder::append(Comm& c, Record& r) {
  r.sequence = next_sequence_.fetch_add(1, std::memory_order_relaxed);
  if (r.time_ns == 0) r.time_ns = now_ns();
  if (!c.ring.try_push(r)) c.lost.fetch_add(1, std::memory_order_relaxed);
}

uint32_t Recorder::stream_number(const void* stream) {
  if (stream == nullptr) return 0;
  // Open addressing over a fixed table; a stream is never removed (NCCL's handles are opaque).
  size_t at = (reinterpret_cast<uintptr_t>(stream) >> 4) % kStreamsMax;
  for (size_t probe = 0; probe < kStreamsMax; ++probe, at = (at + 1) % kStreamsMax) {
    const void* seen = streams_[at].load(std::memory_order_acquire);
    if (seen == stream) return static_cast<uint32_t>(at + 1);
    if (seen == nullptr) {
      const void* expected = nullptr;
      if (streams_[at].compare_exchange_strong(expected, stream) || expected == stream)
        return static_cast<uint32_t>(at + 1);
    }
  }
  return 0;  // the table is full: the operation is recorded without its stream
}

// At the first communicator's init (never at load: a process that loads NCCL and communicates
// nothing writes nothing): where the traces go, the captured pool, the flusher.
void Recorder::start() {
  captured_ = std::make_unique<CapturedOp[]>(kCapturedOps);
  const char* events = std::getenv("PPSPEC_PROFILER_EVENTS");
  completions_ = events == nullptr || std::strcmp(events, "calls") != 0;
  const char* watch = std::getenv("PPSPEC_WATCH");
  const char* local = std::getenv("PPSPEC_TRACE_DIR");
  const std::string fallback = local != nullptr && *local != '\0' ? local : "ppspec-nccl-traces";
  if (watch != nullptr && *watch != '\0' && is_watch_address(watch)) {
    watch_address_ = watch;
    dir_ = fallback;
  } else if (watch != nullptr && *watch != '\0') {
    dir_ = watch;  // a folder the watcher reads (shared between the nodes)
    if (!usable_directory(dir_)) {
      std::fprintf(stderr, "ppspec-nccl-profiler: cannot write to the watcher's folder '%s': recording in '%s' only\n",
                   watch, fallback.c_str());
      dir_ = fallback;
    }
  } else {
    dir_ = fallback;
  }
  if (!usable_directory(dir_)) {
    disable("cannot create the trace folder (set PPSPEC_TRACE_DIR to a writable folder)");
    return;
  }
  std::atexit([] { Recorder::instance().finish(); });
  flusher_ = std::thread([this] { flusher_loop(); });
}

void Recorder::flusher_loop() {
  for (int ticks = 1; !stopping_.load(std::memory_order_relaxed); ++ticks) {
    std::this_thread::sleep_for(kFlushPeriod);
    flush();
    if (ticks % kAbortPollTicks != 0) continue;
    std::lock_guard<std::mutex> lock(flush_mutex_);
    for (Output* o : outputs_) {
      if (!o->abort_requested()) continue;
      // The watcher's --abort: fail the job now rather than at PyTorch's watchdog, minutes later.
      std::fprintf(stderr, "ppspec-nccl-profiler: the watcher asked this job to stop: aborting\n");
      std::abort();
    }
  }
}

void Recorder::flush() {
  std::lock_guard<std::mutex> lock(flush_mutex_);
  drain_locked();
}

Output* Recorder::output_for(int global_rank) {
  for (Output* o : outputs_)
    if (o->rank() == global_rank) return o;
  if (outputs_.size() >= kOutputsMax) return nullptr;
  std::string error;
  Output* o = Output::open(dir_, global_rank, clock_.load() != nullptr, completions_, watch_address_, error);
  if (o == nullptr) {
    disable(error.c_str());
    return nullptr;
  }
  outputs_.push_back(o);
  return o;
}

}  // namespace ppspec::nccl_profiler
