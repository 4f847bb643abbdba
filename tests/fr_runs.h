// Jobs made in a test as ppspec's Flight Recorder writer takes them (traces/fr_writer.h: each
// communicator's members, each rank's operations in posting order), and their dumps as PyTorch
// writes them, read back and checked.
#pragma once

#include <string>
#include <vector>

#include "traces/flight_recorder.h"
#include "traces/fr_record.h"
#include "traces/fr_writer.h"
#include "verify/dumps/flight_recorder_check.h"

namespace ppspec::testing {

class FrJobBuilder {
 public:
  void comm(const std::string& name, const std::vector<int>& ranks) {
    run.members[name].insert(ranks.begin(), ranks.end());
  }
  // A communicator of ranks 0 .. n - 1.
  void comm_of_all(const std::string& name, int n) {
    for (int r = 0; r < n; ++r) run.members[name].insert(r);
  }
  // One operation of `rank`, posted now; completed unless `done` is false. `group` >= 0 joins the
  // rank's ncclGroupStart..End of that number.
  void post(int rank, const std::string& comm, core::OpKind kind, int64_t count, int peer = -1, bool done = true,
            int64_t group = -1, core::Dtype dtype = core::Dtype::f32, int64_t cols = 1) {
    traces::FrPosted p;
    p.comm = comm;
    p.desc.kind = kind;
    p.desc.count = count;
    p.desc.cols = cols;
    p.desc.dtype = dtype;
    p.desc.peer = peer;
    p.op_id = next_id_++;
    p.posted = t_;
    p.completed = done ? t_ + 500 : -1;
    p.actor = "rank" + std::to_string(rank) + ".s0";
    p.origin = "job.py:" + std::to_string(10 + p.op_id);
    p.group = group;
    t_ += 1000;
    run.posts[rank].push_back(p);
  }
  // The dumps as PyTorch would have written them, read back as `ppspec check` reads them.
  std::vector<traces::FrDump> dumps(const traces::FrWriteOptions& o = {}) const {
    const traces::FrExport e = traces::flight_recorder_of(run, o);
    std::vector<traces::FrDump> out;
    for (const auto& [rank, json] : e.dumps)
      out.push_back(traces::fr_dump_from_json(json, "rank_" + std::to_string(rank), rank));
    traces::resolve_inferred_groups(out);
    traces::check_fr_one_run(out);
    return out;
  }
  core::RunResult check(const traces::FrWriteOptions& o = {},
                        verify::FrCalls calls = verify::FrCalls::synchronous) const {
    return verify::check_flight_recorder(dumps(o), verify::FrCheckOptions{calls});
  }

  traces::FrRun run;

 private:
  int64_t t_ = 0;
  int64_t next_id_ = 0;
};

}  // namespace ppspec::testing
