#include "watch/op_window.h"

#include <fmt/format.h>

#include "core/assert.h"
#include "core/error.h"
#include "traces/fr_record.h"
#include "verify/dumps/flight_recorder_check.h"

namespace ppspec::watch {

void OpWindow::on_event(const core::Event& e) {
  if (e.kind == core::EventKind::comm_init) {
    run_.members[std::string(e.comm)].insert(e.rank);
    return;
  }
  if (!e.has_op) return;
  if (e.kind == core::EventKind::op_posted) {
    auto& mine = run_.posts[e.rank];
    if (mine.size() == kWindowOps) {
      run_.before[e.rank].next(mine.front());  // the records after it are numbered as if it were still there
      by_op_.erase(mine.front().op_id);
      mine.pop_front();
      ++dropped_;
    }
    mine.push_back(traces::FrPosted{std::string(e.comm), e.op, e.op_id, e.t, -1, -1, std::string(e.actor),
                                    std::string(e.text), e.value});
    by_op_[e.op_id] = &mine.back();  // a deque's elements stay where they are as it grows and shrinks at its ends
    if (core::is_p2p(e.op.kind) && e.op.peer >= 0) run_.members[std::string(e.comm)].insert(e.op.peer);
    return;
  }
  if (e.kind != core::EventKind::op_started && e.kind != core::EventKind::op_completed) return;
  const auto it = by_op_.find(e.op_id);
  if (it == by_op_.end()) return;  // left the window already
  (e.kind == core::EventKind::op_started ? it->second->started : it->second->completed) = e.t;
}

namespace {

// Dumps name process groups "0", "1", ... (traces/fr_writer.h); a live job's report names its
// communicators as NCCL named them.
void name_communicators(std::vector<core::Finding>& findings, const std::map<std::string, std::string>& comm_of) {
  auto rename = [&](std::string& group) {
    if (const auto it = comm_of.find(group); it != comm_of.end()) group = it->second;
  };
  for (core::Finding& f : findings) {
    rename(f.culprit.comm);
    for (core::Site& s : f.sites) rename(s.comm);
  }
}

}  // namespace

core::RunResult OpWindow::analyse() const {
  const traces::FrExport dumps = traces::flight_recorder_of(run_);
  std::vector<traces::FrDump> parsed;
  for (const auto& [rank, json] : dumps.dumps) {
    parsed.push_back(traces::fr_dump_from_json(json, fmt::format("rank{}", rank), rank));
    parsed.back().same_moment = true;  // every rank's window, as it stands now
  }
  core::RunResult r = verify::check_flight_recorder(parsed, verify::FrCheckOptions{verify::FrCalls::async});
  std::map<std::string, std::string> comm_of;
  for (const auto& [comm, group] : dumps.group_of) comm_of.emplace(group, comm);
  name_communicators(r.findings, comm_of);
  name_communicators(r.notes, comm_of);
  return r;
}

}  // namespace ppspec::watch
