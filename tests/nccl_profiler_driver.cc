// Plays NCCL to the profiler plugin in a process of its own, as a job's rank: the plugin is found
// and loaded as NCCL loads it, configured from the environment (PPSPEC_RANK, PPSPEC_WATCH,
// PPSPEC_TRACE_DIR), its flusher thread running and its exit handler writing the trailers. The
// plugin tests (tests/nccl_profiler_test.cc) run two of these as a two-rank job.
//
//   nccl_profiler_driver PLUGIN SCRIPT
// SCRIPT: "steps N" (N steps of the seed PR's wire pattern on 'act' and 'bcast'), "extra" (the
// same, the last rank posting one broadcast twice at step 2), "graph" (an all-reduce captured and
// replayed three times), "flood N" (N all-reduces that never complete: the slot pool wraps),
// "unload" (steps 2, then NCCL's dlclose after the last finalize), "slow" (steps forever, 20 ms
// apart: for --abort), "v99" (load the plugin by ncclProfiler_v5 / _v6 and say whether there is one).
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "watch/nccl_profiler/abi.h"

namespace abi = ppspec::nccl_profiler::abi;

namespace {

struct Nccl {
  const abi::ProfilerTable* t = nullptr;
  void* act = nullptr;
  void* bcast = nullptr;
  int rank = 0, ranks = 2, stream = 0;

  void* start(void* ctx, abi::EventDescr& d) {
    void* h = nullptr;
    t->start_event(ctx, &h, &d);
    return h;
  }
  void kernel(void* ctx, void* task) {
    abi::EventDescr k{};
    k.type = abi::kKernelCh;
    k.parent = task;
    void* ch = start(ctx, k);
    abi::EventStateArgs a{};
    t->record_event_state(ch, abi::kKernelChStop, &a);
    t->stop_event(ch);
  }
  // An ungrouped collective: group, call, task, one kernel channel (completes it unless `hang`).
  void collective(void* ctx, const char* func, int root, size_t count = 16, bool captured = false, bool hang = false) {
    abi::EventDescr g{};
    g.type = abi::kGroupApi;
    g.group_api.group_depth = 1;
    void* group = start(ctx, g);
    abi::EventDescr c{};
    c.type = abi::kCollApi;
    c.parent = group;
    c.coll_api = abi::CollApiDescr{func, count, "ncclInt64", root, &stream, captured};
    void* call = start(ctx, c);
    t->stop_event(call);
    if (!captured) task(ctx, call, hang);  // at the implicit group's end; a captured call's at each replay
    t->stop_event(group);
    for (int replay = 0; captured && replay < 3; ++replay) task(ctx, call, false);
  }
  void task(void* ctx, void* call, bool hang) {
    abi::EventDescr k{};
    k.type = abi::kColl;
    k.parent = call;
    k.coll.channels = 1;
    void* task = start(ctx, k);
    t->stop_event(task);
    if (!hang) kernel(ctx, task);
  }
  void p2p(void* ctx, const char* func, int peer) {
    abi::EventDescr g{};
    g.type = abi::kGroupApi;
    g.group_api.group_depth = 1;
    void* group = start(ctx, g);
    abi::EventDescr c{};
    c.type = abi::kP2pApi;
    c.parent = group;
    c.p2p_api = abi::P2pApiDescr{func, 256, "ncclFloat32", &stream, false};
    void* call = start(ctx, c);
    t->stop_event(call);
    abi::EventDescr k{};
    k.type = abi::kP2p;
    k.parent = call;
    k.p2p = abi::P2pDescr{func, nullptr, "ncclFloat32", 256, peer, 1, nullptr};
    void* task = start(ctx, k);
    t->stop_event(task);
    t->stop_event(group);
    kernel(ctx, task);
  }
  // The seed PR's step: activations on 'act', then sampled, counts and drafts broadcast from the
  // last rank. With `extra`, the last rank posts the drafts twice at step 2: every later broadcast
  // of it pairs one place late, and its last one has no partner, so NCCL never completes it.
  void step(int s, int steps, bool extra) {
    if (rank > 0) p2p(act, "Recv", rank - 1);
    if (rank + 1 < ranks) p2p(act, "Send", rank + 1);
    const bool shifted = extra && rank == ranks - 1;
    collective(bcast, "Broadcast", ranks - 1, 16);
    collective(bcast, "Broadcast", ranks - 1, 8);
    collective(bcast, "Broadcast", ranks - 1, 12, false, shifted && s == steps - 1);
    if (shifted && s == 2) collective(bcast, "Broadcast", ranks - 1, 12);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: nccl_profiler_driver PLUGIN SCRIPT [N]\n");
    return 2;
  }
  const std::string script = argv[2];
  const int n = argc > 3 ? std::atoi(argv[3]) : 4;
  void* lib = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);  // as NCCL opens a profiler plugin
  if (lib == nullptr) {
    std::fprintf(stderr, "driver: %s\n", ::dlerror());
    return 2;
  }
  Nccl nccl;
  nccl.t = static_cast<const abi::ProfilerTable*>(::dlsym(lib, "ncclProfiler_v6"));
  if (nccl.t == nullptr) nccl.t = static_cast<const abi::ProfilerTable*>(::dlsym(lib, "ncclProfiler_v5"));
  if (script == "v99") {
    std::printf("driver: %s\n", nccl.t == nullptr ? "no ncclProfiler_v6 or _v5: NCCL goes on without this plugin"
                                                  : "a table NCCL loads");
    return 0;
  }
  const char* rank = std::getenv("PPSPEC_RANK");
  nccl.rank = rank != nullptr ? std::atoi(rank) : 0;
  int mask = 0;
  nccl.t->init(&nccl.act, 0xac7, &mask, "act", 1, nccl.ranks, nccl.rank, nullptr);
  nccl.t->init(&nccl.bcast, 0xbca57, &mask, "bcast", 1, nccl.ranks, nccl.rank, nullptr);
  if (script == "steps" || script == "extra" || script == "unload")
    for (int s = 0; s < (script == "unload" ? 2 : n); ++s) nccl.step(s, n, script == "extra");
  if (script == "graph") nccl.collective(nccl.bcast, "AllReduce", 0, 16, true);
  if (script == "flood")
    for (int i = 0; i < n; ++i) nccl.collective(nccl.bcast, "AllReduce", 0, 16, false, true);
  for (int s = 0; script == "slow"; ++s) {
    nccl.step(s, 1 << 30, false);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  nccl.t->finalize(nccl.act);
  nccl.t->finalize(nccl.bcast);
  if (script == "unload") ::dlclose(lib);  // NCCL unloads its profiler after the last finalize
  std::printf("driver rank %d: done\n", nccl.rank);
  return 0;
}
