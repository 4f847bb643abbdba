#include "nccl_profiler/recorder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "nccl_profiler/trace_lines.h"

namespace ppspec::nccl_profiler {

struct Recorder::Output {
  int rank = -1;
  FILE* file = nullptr;
  std::string path;
  std::string buffer;
  uint64_t lost_written = 0;
};

namespace {

int global_rank_from_environment() {
  for (const char* name : {"PPSPEC_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end == '\0' && r >= 0 && r < (1 << 20)) return static_cast<int>(r);
  }
  return -1;
}

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

Comm* Recorder::init_comm(uint64_t hash, const char* name, int ranks, int rank) {
  const size_t index = comm_count_.fetch_add(1);
  if (index >= kCommsMax) {
    comm_count_.fetch_sub(1);
    std::fprintf(stderr, "ppspec-nccl-profiler: more than %zu communicators: communicator %016llx is not recorded\n", kCommsMax,
                 static_cast<unsigned long long>(hash));
    return nullptr;
  }
  auto* c = new Comm();
  c->hash = hash;
  c->ranks = ranks;
  c->rank = rank;
  c->global_rank = global_rank_from_environment();
  std::snprintf(c->name, sizeof c->name, "%s", name != nullptr ? name : "");
  c->init_ns = now_ns();
  for (OpSlot& s : c->slots) s.comm = c;
  comms_[index].store(c, std::memory_order_release);
  std::call_once(started_, [this] { start_flusher(); });
  return c;
}

void Recorder::finalize_comm(Comm& c) {
  Record r;
  r.kind = RecordKind::comm_finalized;
  r.time_ns = now_ns();
  append(c, r);
  c.finalized.store(true, std::memory_order_release);
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
  s.channels_done.store(0, std::memory_order_relaxed);
  return s;
}

void Recorder::append(Comm& c, const Record& r) {
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
      if (streams_[at].compare_exchange_strong(expected, stream) || expected == stream) return static_cast<uint32_t>(at + 1);
    }
  }
  return 0;  // the table is full: the operation is recorded without its stream
}

void Recorder::start_flusher() {
  const char* watch = std::getenv("PPSPEC_WATCH");
  const char* local = std::getenv("PPSPEC_TRACE_DIR");
  if (watch != nullptr && usable_directory(watch)) {
    dir_ = watch;
    abort_file_ = dir_ + "/ppspec-abort";
  } else {
    dir_ = local != nullptr && *local != '\0' ? local : "ppspec-nccl-traces";
    if (watch != nullptr)
      std::fprintf(stderr, "ppspec-nccl-profiler: cannot write to the watcher's directory '%s': recording in '%s' only\n", watch, dir_.c_str());
    if (!usable_directory(dir_)) {
      disable("cannot create the trace directory (set PPSPEC_TRACE_DIR)");
      return;
    }
  }
  std::atexit([] { Recorder::instance().finish(); });
  flusher_ = std::thread([this] { flusher_loop(); });
}

void Recorder::flusher_loop() {
  int ticks = 0;
  while (!stopping_.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    flush();
    // The watcher's --abort: fail the job now rather than at PyTorch's watchdog, minutes later.
    if (++ticks % 50 == 0 && !abort_file_.empty() && ::access(abort_file_.c_str(), F_OK) == 0) {
      flush();
      std::fprintf(stderr, "ppspec-nccl-profiler: the watcher asked this job to stop (%s): aborting\n", abort_file_.c_str());
      std::abort();
    }
  }
}

void Recorder::flush() {
  std::lock_guard<std::mutex> lock(flush_mutex_);
  drain_locked();
}

Recorder::Output* Recorder::output_for(int global_rank) {
  for (Output* o : outputs_)
    if (o->rank == global_rank) return o;
  if (outputs_.size() >= kOutputsMax) return nullptr;
  auto* o = new Output();
  o->rank = global_rank;
  char host[128] = {};
  ::gethostname(host, sizeof host - 1);
  o->path = dir_ + "/" + trace_file_name(global_rank, host, ::getpid());
  o->file = std::fopen(o->path.c_str(), "w");
  if (o->file == nullptr) {
    delete o;
    disable("cannot open a trace file in the trace directory");
    return nullptr;
  }
  o->buffer = header_line(global_rank, host, ::getpid(), clock_.load() != nullptr);
  outputs_.push_back(o);
  return o;
}

void Recorder::drain_locked() {
  const size_t n = std::min(comm_count_.load(std::memory_order_acquire), kCommsMax);
  written_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Comm* c = comms_[i].load(std::memory_order_acquire);
    if (c == nullptr) continue;  // counted, not yet stored
    Output* out = output_for(c->global_rank);
    if (out == nullptr) return;
    if (!written_[i].init) {
      out->buffer += comm_init_line(*c);
      written_[i].init = true;
    }
    Record r;
    while (c->ring.try_pop(r)) out->buffer += record_line(*c, r);
    const uint64_t lost = c->lost.load(std::memory_order_relaxed);
    if (lost != written_[i].lost) out->buffer += lost_line(*c, lost);
    written_[i].lost = lost;
  }
  for (Output* o : outputs_) {
    if (o->buffer.empty()) continue;
    std::fwrite(o->buffer.data(), 1, o->buffer.size(), o->file);
    std::fflush(o->file);
    o->buffer.clear();
  }
}

void Recorder::end_outputs() {
  drain_locked();
  for (Output* o : outputs_) {
    const std::string end = trailer_line(said_disabled_.load());
    std::fwrite(end.data(), 1, end.size(), o->file);
    std::fclose(o->file);
    delete o;
  }
  outputs_.clear();
}

void Recorder::finish() {
  stopping_.store(true);
  if (flusher_.joinable()) flusher_.join();
  std::lock_guard<std::mutex> lock(flush_mutex_);
  end_outputs();
}

void Recorder::end_job() {
  std::lock_guard<std::mutex> lock(flush_mutex_);
  end_outputs();
}

void Recorder::begin_job(const std::string& dir) {
  std::call_once(started_, [] {});  // a harness flushes by itself: no flusher thread
  std::lock_guard<std::mutex> lock(flush_mutex_);
  end_outputs();
  const size_t n = std::min(comm_count_.load(), kCommsMax);
  for (size_t i = 0; i < n; ++i) delete comms_[i].exchange(nullptr);
  comm_count_.store(0);
  written_.clear();
  for (auto& s : streams_) s.store(nullptr);
  dir_ = dir;
  abort_file_.clear();
  if (!usable_directory(dir_)) disable("cannot create the trace directory");
}

}  // namespace ppspec::nccl_profiler
