// Where an engine step's time goes on a GPU, measured with CUDA events: timing events around every
// kernel launch, graph replay, NCCL operation (a group: from its first operation to ncclGroupEnd)
// and copy a host thread enqueues while it runs engine step N; and the host time of the step (from
// the step's start to the thread's next wait for a command). Off unless asked for (each timed call
// records two events: a few microseconds of host time, which the figures then include).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "core/types.h"

namespace ppspec::real {

enum class StepPart : uint8_t { kernels, graphs, communication, copies };
inline constexpr size_t kStepParts = 4;

struct StepTotals {
  std::array<double, kStepParts> device_us{};  // summed event intervals, per part
  double host_us = 0;
  int timed = 0;  // intervals measured
};

class StepProfiler {
 public:
  explicit StepProfiler(bool on) : on_(on) {}
  bool on() const { return on_; }

  // A pair of timing events on `stream` around what the caller enqueues while it lives; nothing
  // when off, outside a step (step < 0) or while the stream captures.
  class Timed {
   public:
    Timed(StepProfiler& p, core::RankId rank, int64_t step, void* stream, StepPart part, bool capturing);
    ~Timed();
    Timed(const Timed&) = delete;
    Timed& operator=(const Timed&) = delete;

   private:
    StepProfiler* profiler_ = nullptr;
    core::RankId rank_;
    int64_t step_;
    void* stream_;
    StepPart part_;
    void* start_ = nullptr;  // cudaEvent_t
  };

  // An interval whose start event was recorded earlier (an NCCL group: first operation to group end).
  void* begin(void* stream);
  void end(core::RankId rank, int64_t step, void* stream, StepPart part, void* start);
  void host(core::RankId rank, int64_t step, core::Time ns);

  // After the run, with every stream drained: the totals per (rank, step).
  std::map<std::pair<core::RankId, int64_t>, StepTotals> totals();

 private:
  struct Interval {
    core::RankId rank;
    int64_t step;
    StepPart part;
    void* start;
    void* end;
  };
  static constexpr size_t kIntervalsMax = size_t{1} << 22;  // about 128 MiB of event handles at most

  bool on_;
  std::mutex mu_;
  std::vector<Interval> intervals_;
  std::map<std::pair<core::RankId, int64_t>, StepTotals> host_;
};

}  // namespace ppspec::real
