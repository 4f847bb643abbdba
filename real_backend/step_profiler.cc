#include "real_backend/step_profiler.h"

#include <cuda_runtime.h>

#include <stdexcept>

#include "real_backend/cuda_check.h"

namespace ppspec::real {
namespace {

void* record_timing_event(void* stream) {
  cudaEvent_t ev;
  PPSPEC_CUDA(cudaEventCreate(&ev));  // timing enabled
  PPSPEC_CUDA(cudaEventRecord(ev, as_stream(stream)));
  return ev;
}

}  // namespace

StepProfiler::Timed::Timed(StepProfiler& p, core::RankId rank, int64_t step, void* stream, StepPart part,
                           bool capturing)
    : rank_(rank), step_(step), stream_(stream), part_(part) {
  if (!p.on() || step < 0 || capturing) return;
  profiler_ = &p;
  start_ = p.begin(stream);
}

StepProfiler::Timed::~Timed() {
  if (profiler_ == nullptr) return;
  // A destructor must not throw: a failed record leaves the interval out.
  try {
    profiler_->end(rank_, step_, stream_, part_, start_);
  } catch (const std::exception&) {}
}

void* StepProfiler::begin(void* stream) { return record_timing_event(stream); }

void StepProfiler::end(core::RankId rank, int64_t step, void* stream, StepPart part, void* start) {
  void* stop = record_timing_event(stream);
  std::lock_guard<std::mutex> lock(mu_);
  if (intervals_.size() >= kIntervalsMax) throw std::runtime_error("step profiler: more than 4M timed intervals");
  intervals_.push_back(Interval{rank, step, part, start, stop});
}

void StepProfiler::host(core::RankId rank, int64_t step, core::Time ns) {
  if (!on_ || step < 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  host_[{rank, step}].host_us += static_cast<double>(ns) / 1e3;
}

std::map<std::pair<core::RankId, int64_t>, StepTotals> StepProfiler::totals() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::pair<core::RankId, int64_t>, StepTotals> out = host_;
  for (const Interval& i : intervals_) {
    float ms = 0;
    PPSPEC_CUDA(cudaEventSynchronize(as_event(i.end)));
    PPSPEC_CUDA(cudaEventElapsedTime(&ms, as_event(i.start), as_event(i.end)));
    StepTotals& t = out[{i.rank, i.step}];
    t.device_us[static_cast<size_t>(i.part)] += static_cast<double>(ms) * 1e3;
    ++t.timed;
  }
  return out;
}

}  // namespace ppspec::real
