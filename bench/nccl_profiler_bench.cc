// What the NCCL profiler plugin costs an NCCL job, per operation, on the CPU: the entry points NCCL
// calls for one operation, in its order, through the plugin library as NCCL loads it.
// * BM_PluginCallbacks/KIND: what NCCL's threads spend in the plugin (the API event, the task, two
//   kernel channels started and stopped) for an all_reduce (KIND 0) or a grouped send and recv
//   (KIND 1); the flusher's draining runs outside the timing, as it runs on its own thread.
// * BM_PluginFlusher: the flusher's share per operation (formatting and writing three lines),
//   on the thread of its own, to say what the plugin costs the whole process.
// The plugin allocates with the allocator of the process that loads it: here ppspec_bench's (mimalloc
// by default, PPSPEC_ALLOCATOR), in a user's job the job's own. For figures under glibc's allocator,
// as most jobs run, configure with -DPPSPEC_ALLOCATOR=system.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "watch/nccl_profiler/abi.h"
#include "watch/nccl_profiler/sim_adapter.h"

namespace ppspec {
namespace {

namespace npp = nccl_profiler;
namespace abi = nccl_profiler::abi;

struct Plugin {
  const npp::PluginLibrary& lib = npp::PluginLibrary::open(npp::built_plugin_path());
  const abi::ProfilerTable& t = *lib.table(5);
  void* ctx = nullptr;
  int stream = 0;

  explicit Plugin(const std::string& dir) {
    std::filesystem::create_directories(dir);
    lib.hooks().begin_job(dir.c_str());
    lib.hooks().set_rank(0);
    int mask = 0;
    t.init(&ctx, 0x5eed, &mask, "bench", 1, 2, 0, nullptr);
  }
  ~Plugin() {
    t.finalize(ctx);
    lib.hooks().end_job();
  }
  void* start(abi::EventDescr& d) {
    void* h = nullptr;
    t.start_event(ctx, &h, &d);
    return h;
  }
  void kernel(void* task, int channels) {
    void* ch[2] = {};
    for (int c = 0; c < channels; ++c) {
      abi::EventDescr k{};
      k.type = abi::kKernelCh;
      k.parent = task;
      ch[c] = start(k);
    }
    for (int c = 0; c < channels; ++c) {
      abi::EventStateArgs a{};
      t.record_event_state(ch[c], abi::kKernelChStop, &a);
      t.stop_event(ch[c]);
    }
  }
  // One ungrouped all_reduce, as NCCL 2.28 tells it: group, call, task at the implicit group end, kernel.
  void all_reduce() {
    abi::EventDescr g{};
    g.type = abi::kGroupApi;
    g.group_api.group_depth = 1;
    void* group = start(g);
    abi::EventDescr c{};
    c.type = abi::kCollApi;
    c.parent = group;
    c.coll_api = abi::CollApiDescr{"AllReduce", 2, "ncclFloat32", 0, &stream, false};
    void* call = start(c);
    t.stop_event(call);
    abi::EventDescr k{};
    k.type = abi::kColl;
    k.parent = call;
    k.coll.func = "AllReduce";
    k.coll.channels = 2;
    void* task = start(k);
    t.stop_event(task);
    t.stop_event(group);
    kernel(task, 2);
  }
  // A grouped send and recv to the same peer.
  void exchange() {
    abi::EventDescr g{};
    g.type = abi::kGroupApi;
    g.group_api.group_depth = 2;
    void* group = start(g);
    void* calls[2];
    const char* funcs[2] = {"Send", "Recv"};
    for (int i = 0; i < 2; ++i) {
      abi::EventDescr c{};
      c.type = abi::kP2pApi;
      c.parent = group;
      c.p2p_api = abi::P2pApiDescr{funcs[i], 2, "ncclFloat32", &stream, false};
      calls[i] = start(c);
      t.stop_event(calls[i]);
    }
    for (int i = 0; i < 2; ++i) {
      abi::EventDescr k{};
      k.type = abi::kP2p;
      k.parent = calls[i];
      k.p2p = abi::P2pDescr{funcs[i], nullptr, "ncclFloat32", 2, 1, 1, nullptr};
      void* task = start(k);
      t.stop_event(task);
      kernel(task, 1);
    }
    t.stop_event(group);
  }
};

const std::string kDir = (std::filesystem::temp_directory_path() / "ppspec-plugin-bench").string();

void BM_PluginCallbacks(benchmark::State& state) {
  Plugin p(kDir);
  const bool p2p = state.range(0) == 1;
  int64_t n = 0;
  for (auto _ : state) {
    p2p ? p.exchange() : p.all_reduce();
    if (++n % 256 == 0) {
      state.PauseTiming();  // the flusher's work, which runs on its own thread in a job
      p.lib.hooks().flush();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() *
                          (p2p ? 2 : 1));  // operations: 1e9 / items_per_second is ns per operation
}
BENCHMARK(BM_PluginCallbacks)->Arg(0)->Arg(1);

void BM_PluginFlusher(benchmark::State& state) {
  Plugin p(kDir);
  for (auto _ : state) {
    state.PauseTiming();
    for (int i = 0; i < 256; ++i) p.all_reduce();
    state.ResumeTiming();
    p.lib.hooks().flush();
  }
  state.SetItemsProcessed(state.iterations() * 256);
}
BENCHMARK(BM_PluginFlusher);

}  // namespace
}  // namespace ppspec
