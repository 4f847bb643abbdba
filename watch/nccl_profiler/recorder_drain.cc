// The flusher's half of the Recorder: the rings drained in record order into each rank's output,
// the trailers at exit, and the harness's jobs.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "watch/nccl_profiler/output.h"
#include "watch/nccl_profiler/recorder.h"
#include "watch/nccl_profiler/trace_lines.h"

namespace ppspec::nccl_profiler {

void Recorder::drain_locked() {
  const size_t n = std::min(comm_count_.load(std::memory_order_acquire), kCommsMax);
  init_written_.resize(n, false);
  lost_written_.resize(n, 0);
  batch_.clear();
  std::vector<size_t> comm_of;  // [batch_ index]: the communicator's index
  for (size_t i = 0; i < n; ++i) {
    Comm* c = comms_[i].load(std::memory_order_acquire);
    if (c == nullptr) continue;  // counted, not yet stored
    Output* out = output_for(c->global_rank);
    if (out == nullptr) return;
    if (!init_written_[i]) out->buffer() += comm_init_line(*c);
    init_written_[i] = true;
    for (Record r; c->ring.try_pop(r);) {
      batch_.push_back(r);
      comm_of.push_back(i);
    }
  }
  // The rings are per communicator; a rank's trace is in the order its calls were made.
  std::vector<size_t> order(batch_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [this](size_t a, size_t b) { return batch_[a].sequence < batch_[b].sequence; });
  for (size_t i : order) {
    const Comm& c = *comms_[comm_of[i]].load(std::memory_order_relaxed);
    output_for(c.global_rank)->buffer() += record_line(c, batch_[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    Comm* c = comms_[i].load(std::memory_order_acquire);
    if (c == nullptr) continue;
    const uint64_t lost = c->lost.load(std::memory_order_relaxed);
    if (lost != lost_written_[i]) output_for(c->global_rank)->buffer() += lost_line(*c, lost);
    lost_written_[i] = lost;
  }
  for (Output* o : outputs_) o->write_buffer();
}

void Recorder::end_outputs() {
  drain_locked();
  for (Output* o : outputs_) {
    o->close(trailer_line(said_disabled_.load()));
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
  forget_comms();
}

// For harnesses, between jobs: nothing of the last job may reach the next one's folder.
void Recorder::forget_comms() {
  const size_t n = std::min(comm_count_.load(), kCommsMax);
  for (size_t i = 0; i < n; ++i) delete comms_[i].exchange(nullptr);
  comm_count_.store(0);
  captured_count_.store(0);
  init_written_.clear();
  lost_written_.clear();
  for (auto& s : streams_) s.store(nullptr);
}

void Recorder::begin_job(const std::string& dir) {
  std::call_once(started_, [this] {
    captured_ = std::make_unique<CapturedOp[]>(kCapturedOps);
  });  // no flusher: the harness flushes
  std::lock_guard<std::mutex> lock(flush_mutex_);
  end_outputs();
  forget_comms();
  dir_ = dir;
  watch_address_.clear();
  enabled_.store(true);
  said_disabled_.store(false);
  ::mkdir(dir_.c_str(), 0777);
  if (::access(dir_.c_str(), W_OK | X_OK) != 0) disable("cannot create the trace folder");
}

}  // namespace ppspec::nccl_profiler
