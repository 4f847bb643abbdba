#include "real_backend/op_tracker.h"

#include <cuda_runtime.h>

#include <chrono>

#include "real_backend/cuda_check.h"
#include "real_backend/real_runtime.h"

namespace ppspec::real {

CompletionEvent::~CompletionEvent() {
  if (event != nullptr) cudaEventDestroy(as_event(event));
}

OpTracker::~OpTracker() { stop(); }

TrackedOp* OpTracker::add(std::unique_ptr<TrackedOp> op) {
  op->desc.label.name = op->label;
  op->posted_at = rt_.now();
  TrackedOp* raw = op.get();
  if (!raw->kernel.empty()) {  // kernel_launched was published by the launch itself
    std::lock_guard<std::mutex> lock(mu_);
    pending_.at(static_cast<size_t>(raw->rank)).push_back(std::move(op));
    return raw;
  }
  core::Event e;
  e.t = raw->posted_at;
  e.kind = core::EventKind::op_posted;
  e.rank = raw->rank;
  e.actor = raw->actor;
  e.comm = raw->comm;
  e.op_id = raw->op_id;
  e.cseq = raw->cseq;
  e.has_op = true;
  e.op = raw->desc;
  e.text = raw->origin;
  e.value = raw->group;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.at(static_cast<size_t>(raw->rank)).push_back(std::move(op));
  }
  ++posted_;
  rt_.publish(e);
  return raw;
}

void OpTracker::attach(const std::vector<TrackedOp*>& ops, std::shared_ptr<CompletionEvent> done) {
  std::lock_guard<std::mutex> lock(mu_);
  for (TrackedOp* op : ops) op->done = done;
}

void OpTracker::start() {
  stop_ = false;
  for (size_t r = 0; r < pending_.size(); ++r) pollers_.emplace_back([this, r] { poll(static_cast<core::RankId>(r)); });
}

void OpTracker::stop() {
  stop_ = true;
  for (auto& t : pollers_)
    if (t.joinable()) t.join();
  pollers_.clear();
}

bool OpTracker::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& q : pending_)
    if (!q.empty()) return false;
  return true;
}

void OpTracker::poll(core::RankId rank) {
  cudaSetDevice(rank);
  std::vector<std::shared_ptr<CompletionEvent>> to_query;
  while (!stop_) {
    to_query.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& op : pending_[static_cast<size_t>(rank)])
        if (op->done && (to_query.empty() || to_query.back() != op->done)) to_query.push_back(op->done);
    }
    for (const auto& ev : to_query) {
      // May block while another thread holds the context lock: then no progress is seen, which
      // is exactly what the watchdog needs to notice.
      if (cudaEventQuery(as_event(ev->event)) != cudaSuccess) continue;
      std::vector<std::unique_ptr<TrackedOp>> done;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto& q = pending_[static_cast<size_t>(rank)];
        for (auto it = q.begin(); it != q.end();) {
          if ((*it)->done == ev) {
            done.push_back(std::move(*it));
            it = q.erase(it);
          } else {
            ++it;
          }
        }
      }
      for (const auto& op : done) {
        core::Event e;
        e.t = rt_.now();
        e.rank = op->rank;
        e.actor = op->actor;
        if (!op->kernel.empty()) {
          e.kind = core::EventKind::kernel_completed;
          e.kernel = op->kernel;
          e.text = op->label;
          rt_.publish(e);
          continue;
        }
        e.kind = core::EventKind::op_completed;
        e.comm = op->comm;
        e.op_id = op->op_id;
        e.cseq = op->cseq;
        e.has_op = true;
        e.op = op->desc;
        rt_.publish(e);
      }
      if (!done.empty()) rt_.progress();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::vector<core::Event> OpTracker::pending_events(core::Time now, std::deque<std::string>& storage) const {
  std::vector<core::Event> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& q : pending_) {
    for (const auto& op : q) {
      core::Event e;
      e.t = now;
      e.kind = core::EventKind::op_pending;
      e.rank = op->rank;
      e.actor = storage.emplace_back(op->actor);
      e.comm = storage.emplace_back(op->comm);
      e.value = now - op->posted_at;
      e.text = storage.emplace_back(op->origin);
      if (!op->kernel.empty()) {
        e.kernel = storage.emplace_back(op->kernel);
        e.spec = storage.emplace_back(op->label);
        out.push_back(e);
        continue;
      }
      e.op_id = op->op_id;
      e.cseq = op->cseq;
      e.has_op = true;
      e.op = op->desc;
      e.op.label.name = storage.emplace_back(op->label);
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace ppspec::real
