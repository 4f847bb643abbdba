// A real NCCL job with the seed PR's wire pattern, for the plugin's proof on hardware: one process
// per rank, a pipeline of `ranks` stages on communicator 'act' (each stage receives the previous
// stage's activations and sends its own on), and the last stage broadcasting `sampled`, `counts`
// and `drafts` to every rank on communicator 'bcast' at every step. Optionally a CUDA graph of
// all-reduces replayed on 'tp', extra communicators split off 'bcast', and one fault at step 3
// (README of this folder). Bootstrap: rank 0 writes NCCL's unique ids into a file the others read.
// Everything on one stream per rank, so that a fault hangs as it would in vLLM.
//
//   nccl_wire_job --rank R --ranks N --ids FILE [--steps S] [--fault NAME] [--graph] [--split C]
//                 [--bench ITERS --bytes B]
//
// Several ranks may share one GPU when each process has its own NCCL_HOSTID (NCCL then treats
// them as different hosts and connects them through its socket transport): a real multi-rank job
// on a one-GPU machine.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(3);                                                                            \
    }                                                                                          \
  } while (0)
#define CHECK_NCCL(x)                                                                          \
  do {                                                                                         \
    ncclResult_t r_ = (x);                                                                     \
    if (r_ != ncclSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); \
      std::exit(4);                                                                            \
    }                                                                                          \
  } while (0)

struct Args {
  int rank = 0, ranks = 2, steps = 6, split = 0, bench = 0;
  long bytes = 8;
  bool graph = false;
  std::string ids, fault = "none";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (k == "--rank")
      a.rank = std::atoi(v), ++i;
    else if (k == "--ranks")
      a.ranks = std::atoi(v), ++i;
    else if (k == "--ids")
      a.ids = v, ++i;
    else if (k == "--steps")
      a.steps = std::atoi(v), ++i;
    else if (k == "--fault")
      a.fault = v, ++i;
    else if (k == "--split")
      a.split = std::atoi(v), ++i;
    else if (k == "--bench")
      a.bench = std::atoi(v), ++i;
    else if (k == "--bytes")
      a.bytes = std::atol(v), ++i;
    else if (k == "--graph")
      a.graph = true;
    else {
      std::fprintf(stderr, "nccl_wire_job: unknown argument %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (a.ids.empty() || a.ranks < 1 || a.rank < 0 || a.rank >= a.ranks) {
    std::fprintf(stderr, "nccl_wire_job: --rank R --ranks N --ids FILE are required (0 <= R < N)\n");
    std::exit(2);
  }
  return a;
}

constexpr int kComms = 3;  // act, bcast, tp

// Rank 0 makes the ids and publishes them whole (a rename); the others wait for the file.
std::vector<ncclUniqueId> unique_ids(const Args& a) {
  std::vector<ncclUniqueId> ids(kComms);
  if (a.rank == 0) {
    for (auto& id : ids) CHECK_NCCL(ncclGetUniqueId(&id));
    const std::string tmp = a.ids + ".tmp";
    std::ofstream(tmp, std::ios::binary)
        .write(reinterpret_cast<const char*>(ids.data()), sizeof(ncclUniqueId) * kComms);
    std::rename(tmp.c_str(), a.ids.c_str());
    return ids;
  }
  for (;;) {
    std::ifstream in(a.ids, std::ios::binary);
    if (in && in.read(reinterpret_cast<char*>(ids.data()), sizeof(ncclUniqueId) * kComms)) return ids;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The plugin's call-site hook, when NCCL loaded ppspec's plugin (NCCL_PROFILER_PLUGIN names it).
using SetSite = void (*)(const char*);
SetSite site_hook() {
  const char* path = std::getenv("NCCL_PROFILER_PLUGIN");
  if (path == nullptr) return nullptr;
  void* h = ::dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) h = ::dlopen(path, RTLD_NOW);
  return h != nullptr ? reinterpret_cast<SetSite>(::dlsym(h, "ppspec_profiler_set_call_site")) : nullptr;
}

struct Job {
  Args a;
  ncclComm_t act = nullptr, bcast = nullptr, tp = nullptr;
  cudaStream_t stream = nullptr;
  void* buf = nullptr;  // one buffer serves every payload: only the calls matter here
  SetSite site = nullptr;
  int n = 4, k = 3;  // requests per step, drafts per request

  void at(const char* where) {
    if (site != nullptr) site(where);
  }
  void broadcast(int count, ncclDataType_t t, const char* label) {
    at(label);
    CHECK_NCCL(ncclBroadcast(buf, buf, count, t, a.ranks - 1, bcast, stream));
  }
  bool fault_at(int step, const char* name) const { return step == 3 && a.fault == name; }
  // When the faulty step begins (CLOCK_REALTIME, as the plugin's trace): the watcher's delay is measured from here.
  void say_fault_step() const {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    std::printf("rank %d: fault %s: step 3 begins at %lld ns\n", a.rank, a.fault.c_str(),
                static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec);
    std::fflush(stdout);
  }
};

// One engine step of the seed PR's pipeline, with the fault (if any) at step 3.
void step(Job& j, int s) {
  const Args& a = j.a;
  const int hidden = 256;
  const bool last = a.rank == a.ranks - 1;
  if (s == 3 && a.fault != "none") j.say_fault_step();
  if (j.fault_at(s, "inverted_order") && last) j.broadcast(j.n * (j.k + 1), ncclInt64, "feedback.sampled (inverted)");
  if (a.rank > 0) {
    j.at("activations recv");
    CHECK_NCCL(ncclRecv(j.buf, j.n * hidden, ncclFloat32, a.rank - 1, j.act, j.stream));
  }
  if (!last) {
    const int to = j.fault_at(s, "wrong_peer") && a.rank == 0 && a.ranks > 2 ? 2 : a.rank + 1;
    j.at("activations send");
    CHECK_NCCL(ncclSend(j.buf, j.n * hidden, ncclFloat32, to, j.act, j.stream));
  }
  if (!(j.fault_at(s, "inverted_order") && last)) {
    const bool narrow = j.fault_at(s, "size_mismatch") && a.rank == 0;
    j.broadcast(j.n * (narrow ? 1 : j.k + 1), ncclInt64, "feedback.sampled");
  }
  j.broadcast(2 * j.n, j.fault_at(s, "dtype_mismatch") && last ? ncclInt64 : ncclInt32, "feedback.counts");
  if (!(j.fault_at(s, "skipped_collective") && last)) j.broadcast(j.n * j.k, ncclInt64, "feedback.drafts");
  if (j.fault_at(s, "extra_broadcast") && last) j.broadcast(j.n * j.k, ncclInt64, "feedback.drafts (posted twice)");
  if (j.fault_at(s, "ungrouped_exchange") && a.ranks >= 2 && a.rank < 2) {
    // Both ranks send first, then receive, ungrouped, 64 MiB: each send waits for a receive the
    // peer posts only after its own send completes.
    const int peer = 1 - a.rank;
    j.at("ungrouped exchange send");
    CHECK_NCCL(ncclSend(j.buf, 16 << 20, ncclFloat32, peer, j.act, j.stream));
    j.at("ungrouped exchange recv");
    CHECK_NCCL(ncclRecv(j.buf, 16 << 20, ncclFloat32, peer, j.act, j.stream));
  }
}

// A CUDA graph of four all-reduces on 'tp', replayed `replays` times.
void graph(Job& j, int replays) {
  cudaGraph_t g;
  cudaGraphExec_t exec;
  j.at("tp all_reduce (captured)");
  CHECK_NCCL(ncclAllReduce(j.buf, j.buf, 1024, ncclFloat32, ncclSum, j.tp, j.stream));  // connects before the capture
  CHECK_CUDA(cudaStreamSynchronize(j.stream));
  CHECK_CUDA(cudaStreamBeginCapture(j.stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 4; ++i) CHECK_NCCL(ncclAllReduce(j.buf, j.buf, 1024, ncclFloat32, ncclSum, j.tp, j.stream));
  CHECK_CUDA(cudaStreamEndCapture(j.stream, &g));
  CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
  for (int r = 0; r < replays; ++r) CHECK_CUDA(cudaGraphLaunch(exec, j.stream));
  CHECK_CUDA(cudaStreamSynchronize(j.stream));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(g));
}

// `count` communicators split off 'bcast', one all-reduce each.
void split(Job& j, int count) {
  for (int c = 0; c < count; ++c) {
    ncclComm_t sub;
    CHECK_NCCL(ncclCommSplit(j.bcast, 0, j.a.rank, &sub, nullptr));
    j.at("split all_reduce");
    CHECK_NCCL(ncclAllReduce(j.buf, j.buf, 256, ncclFloat32, ncclSum, sub, j.stream));
    CHECK_CUDA(cudaStreamSynchronize(j.stream));
    CHECK_NCCL(ncclCommDestroy(sub));
  }
}

// ITERS operations of BYTES on 'tp', back to back: microseconds per operation. An all-reduce on
// several ranks; alone, a send to itself and its receive in one group (NCCL tells a profiler
// nothing of a one-rank all-reduce, which it copies locally).
void bench_op(Job& j, int count) {
  if (j.a.ranks > 1) {
    CHECK_NCCL(ncclAllReduce(j.buf, j.buf, count, ncclFloat32, ncclSum, j.tp, j.stream));
    return;
  }
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclSend(j.buf, count, ncclFloat32, 0, j.tp, j.stream));
  CHECK_NCCL(ncclRecv(static_cast<char*>(j.buf) + (40 << 20), count, ncclFloat32, 0, j.tp, j.stream));
  CHECK_NCCL(ncclGroupEnd());
}

double cpu_us(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// Wall time, the calling thread's CPU time (what NCCL and the plugin's callbacks cost it) and the
// whole process's (NCCL's proxy thread and the plugin's flusher too), per iteration.
void bench(Job& j) {
  const int count = static_cast<int>(std::max(1L, j.a.bytes / 4));
  for (int i = 0; i < 100; ++i) bench_op(j, count);
  CHECK_CUDA(cudaStreamSynchronize(j.stream));
  const double thread0 = cpu_us(CLOCK_THREAD_CPUTIME_ID), process0 = cpu_us(CLOCK_PROCESS_CPUTIME_ID);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < j.a.bench; ++i) bench_op(j, count);
  CHECK_CUDA(cudaStreamSynchronize(j.stream));
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  const double thread = cpu_us(CLOCK_THREAD_CPUTIME_ID) - thread0,
               process = cpu_us(CLOCK_PROCESS_CPUTIME_ID) - process0;
  std::printf(
      "bench rank %d of %d: %d %s of %ld bytes: %.3f us per operation; cpu us per operation: thread %.3f process "
      "%.3f\n",
      j.a.rank, j.a.ranks, j.a.bench, j.a.ranks > 1 ? "all_reduce" : "grouped self send+recv", j.a.bytes,
      us / j.a.bench, thread / j.a.bench, process / j.a.bench);
}

}  // namespace

int main(int argc, char** argv) {
  Job j;
  j.a = parse(argc, argv);
  const Args& a = j.a;
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaStreamCreateWithFlags(&j.stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc(&j.buf, 80 << 20));
  CHECK_CUDA(cudaMemset(j.buf, 0, 80 << 20));
  const std::vector<ncclUniqueId> ids = unique_ids(a);
  ncclComm_t* comms[kComms] = {&j.act, &j.bcast, &j.tp};
  CHECK_NCCL(ncclGroupStart());
  for (int c = 0; c < kComms; ++c) CHECK_NCCL(ncclCommInitRank(comms[c], a.ranks, ids[c], a.rank));
  CHECK_NCCL(ncclGroupEnd());
  j.site = site_hook();
  if (a.bench > 0) {
    bench(j);
  } else {
    for (int s = 0; s < a.steps; ++s) step(j, s);
    CHECK_CUDA(cudaStreamSynchronize(j.stream));
    if (a.graph) graph(j, 5);
    if (a.split > 0) split(j, a.split);
  }
  std::printf("rank %d: done\n", a.rank);
  for (ncclComm_t* c : comms) CHECK_NCCL(ncclCommDestroy(*c));
  return 0;
}
