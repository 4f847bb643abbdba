// The execution model of a rank's calls, as a Flight Recorder dump leaves it to be assumed: which
// earlier calls each one waits for before it can start. `ppspec check` (who is stuck behind whom) and
// `ppspec import` (the streams of the scenario) use this one model, and say which.
//
// * synchronous (PyTorch's default, and any call whose work is waited for): ProcessGroupNCCL runs a
//   call without async_op on the caller's current stream, and `work.wait()` makes that stream wait
//   for an async one; so a rank's next call, on any group, starts after it. Every call waits for the
//   ones recorded before it, except where the dump shows it did not: it began (`started`, with
//   TORCH_NCCL_ENABLE_TIMING) while an earlier one had not completed, or began or completed before
//   an earlier one completed. It then goes on another stream, after an event of each stream whose
//   calls it did wait for.
// * async (async_op=True, never waited for): each group's collectives on the group's own stream,
//   each pair's p2p on its own, a batch on the group's; no call waits for another stream.
// A coalesced group goes whole on one stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "verify/dumps/fr_job.h"

namespace ppspec::verify {

enum class FrCalls : uint8_t { synchronous, async };
const char* to_string(FrCalls c);
std::optional<FrCalls> parse_fr_calls(const std::string& s);  // "sync", "async"
// The model in words, for reports.
std::string fr_calls_words(FrCalls c);

inline constexpr size_t kFrStreamsMax = 64;  // streams of one rank

// Where a call goes: its stream, and the other streams whose calls so far it waits for.
struct FrPlacement {
  size_t stream = 0;
  std::vector<size_t> waits_for;
  // The earliest call placed before it that it waits for and that did not complete (its record
  // order); SIZE_MAX: none — it runs, as far as its rank's own calls go.
  size_t blocker = SIZE_MAX;
};

// One rank's calls placed in record order.
class FrStreams {
 public:
  FrStreams(FrCalls calls, const std::string& file) : calls_(calls), file_(file) {}
  // `recorded`: the stream the call ran on, where the input says (a ppspec trace exported as dumps).
  FrPlacement place(const FrOp& op, std::optional<size_t> recorded = std::nullopt);
  size_t streams() const { return streams_.size(); }

 private:
  struct Observed {
    bool began = false, done = false;
    int64_t started_ns = 0, completed_ns = 0;  // 0: not recorded
  };
  struct Stream {
    bool all_done = true;
    int64_t last_completed_ns = 0;
    size_t ops = 0;
    size_t last_use = 0;
    size_t first_incomplete = SIZE_MAX;  // the record order of its first call not completed
  };
  static Observed observed(const FrOp& op);
  static bool overlaps(const Stream& s, const Observed& op);
  size_t pick(const Observed& o, const FrOp& op);
  size_t async_stream(const FrOp& op);
  size_t grow_to(size_t s, int64_t record);
  void add(size_t s, const Observed& o, const FrOp& op);

  FrCalls calls_;
  const std::string& file_;
  std::vector<Stream> streams_;
  std::vector<std::vector<size_t>> waited_;  // [x][y]: how many of y's calls x has waited for
  std::map<std::tuple<size_t, int, int>, size_t> async_streams_;
  size_t uses_ = 0;
  size_t group_ = SIZE_MAX, group_stream_ = 0;
};

}  // namespace ppspec::verify
