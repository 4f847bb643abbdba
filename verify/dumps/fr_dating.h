// What a job's dumps say of time, to tell a stalled job from one still running (a dump taken on
// demand, or while a slow rank catches up). A dump records when each operation was enqueued, and when
// the watchdog found it completed; it does not record when it was written. Two things date it:
// * NCCL's watchdog retires a work once it completed or timed out: an operation retired and not
//   completed timed out (the dump the watchdog writes on a timeout shows it);
// * dumping updates the state of every work not yet retired: one found completed then, and not yet
//   retired, says when the dump was written, within the watchdog's polling.
// An operation older than its timeout_ms at the dump (or at the newest time the dump records) is
// stalled; one younger, in a dump that says when it was written, may simply be in flight. Otherwise
// the dumps cannot tell a slow job from a stalled one.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "verify/dumps/fr_job.h"

namespace ppspec::verify {

enum class FrAge : uint8_t {
  timed_out,  // retired without completing, or older than its timeout at the dump
  young,      // younger than its timeout when the dump, dated, was written
  undated,    // the dump does not say when it was written, and it is not past its timeout by what it records
};

class FrDating {
 public:
  explicit FrDating(const FrJob& job);
  FrAge age(const FrOp& op) const;
  // "rank 0's dump was written 22 ms after it was posted, of a 600000 ms timeout" (or why nothing dates it).
  std::string words(const FrOp& op) const;
  // Whether rank `rank`'s dump may have been taken before `op` was posted on another rank: it records
  // nothing after (or was written before) the time `op` was posted, or nothing at all while `op`'s
  // dump says it was taken soon after (a job in flight). Clocks of one job's hosts agree to well
  // within the steps of a job.
  bool taken_before(int rank, const FrOp& op) const;
  // Whether rank `rank`'s dump may have been taken before wall-clock time `ns`.
  bool taken_before(int rank, int64_t ns) const;

 private:
  std::map<int, int64_t> written_;  // rank -> when its dump was written (ns), where it shows
  std::map<int, int64_t> newest_;   // rank -> the newest time its dump records (ns)
  bool same_moment_ = false;        // every dump taken at one moment, after all they record
};

}  // namespace ppspec::verify
