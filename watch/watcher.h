// The checker of `ppspec watch`: every rank's plugin trace (watch/nccl_profiler/), line by line as the
// ranks write them, merged into one event stream (traces/profiler_trace.h) and checked as it comes:
// * a misalignment the moment the operation that shows it arrives: positional pairing
//   (verify/monitors/pairing_checker.h) names the operations, their ranks and the root cause;
// * a stall when the caller says the job stopped progressing: check's root-cause logic over a
//   window of each rank's recent operations (op_window.h) gives each rank's frontier and who
//   waits for whom across communicators;
// * at the end, the verdict `ppspec check` gives on the same traces.
// It never dies of its input: a line that does not parse, or contradicts the lines before it, is
// dropped and counted. The same class checks a finished job's traces (`ppspec check DIR`).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/event.h"
#include "core/verdict.h"
#include "traces/jsonl_writer.h"
#include "traces/profiler_trace.h"
#include "verify/monitors/pairing_checker.h"
#include "watch/op_window.h"

namespace ppspec::watch {

struct WatchReport {
  enum class Kind : uint8_t { misalignment, stall };
  Kind kind = Kind::misalignment;
  core::Finding finding;  // its time: the job's clock when the line that revealed it was written
};

inline constexpr size_t kDropReasonsKept = 16;

class Watcher {
 public:
  // `merged_trace`: where to write the job's events in ppspec's trace schema (for `ppspec show`,
  // `export`, `check`), or empty for nowhere.
  // `strict`: a bad line is a core::InputError (naming its file and line), as `ppspec check` wants
  // of a finished job's traces, rather than dropped.
  explicit Watcher(const std::string& merged_trace = {}, bool strict = false);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  size_t add_source(std::string where);
  void add_line(size_t source, std::string_view line);
  // The misalignments found since the last call, in the order they were found.
  std::vector<WatchReport> take_reports();
  // Grows whenever an operation is posted, starts or completes: the caller times a stall by it.
  uint64_t progress() const;
  // Every source has written its trailer (and one came at least).
  bool all_ended() const;
  // The job stopped progressing: where each rank is and who waits for whom; nullopt when nothing
  // is in flight or waits (an idle job has not stalled).
  std::optional<WatchReport> stall() const;
  // The verdict over everything seen, as `ppspec check` gives it. Throws core::InputError when no
  // operation was seen at all: nothing was checked.
  core::RunResult result() const;
  // Writes the merged trace's trailer.
  void finish(const core::RunResult& result);

  const traces::ProfilerJob::Counts& counts() const { return job_.counts(); }
  uint64_t dropped_lines() const { return dropped_; }
  const std::vector<std::string>& drop_reasons() const { return drop_reasons_; }
  std::map<core::RankId, std::string> ranks() const { return job_.ranks(); }

 private:
  class Fanout final : public core::EventSink {
   public:
    explicit Fanout(Watcher& w) : w_(w) {}
    void on_event(const core::Event& e) override;

   private:
    Watcher& w_;
  };
  // `live`: the job still runs (a stall's report), so a trace without its trailer yet is no gap.
  core::RunResult judge(bool live) const;
  void incomplete(core::RunResult& r, bool live) const;
  void never_launched(core::RunResult& r) const;

  Fanout fanout_{*this};
  traces::ProfilerJob job_{fanout_};
  verify::PairingChecker pairing_;
  OpWindow window_;
  std::unique_ptr<traces::JsonlWriter> writer_;
  uint64_t progress_ = 0;
  bool strict_ = false;
  uint64_t dropped_ = 0;
  std::vector<std::string> drop_reasons_;
  size_t closed_reported_ = 0;
  std::set<std::string> reported_;  // communicators a misalignment was reported on
};

}  // namespace ppspec::watch
