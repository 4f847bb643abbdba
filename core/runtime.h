// The runtime interface (DESIGN §2): the only seam between the system under test and its two
// worlds, the simulator (sim/) and real CUDA + NCCL (real_backend/). It mirrors CUDA and NCCL closely
// enough that engine code reads like a model runner: small handles, explicit streams, every
// communication call names its stream and a logical label.
//
// Every call is an interleaving point in the simulator. Calls are made from actors (host threads)
// that the runtime spawned; the calling actor is implicit, as the calling thread is in CUDA.
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/buffer.h"
#include "core/event.h"
#include "core/label.h"
#include "core/op.h"
#include "core/types.h"
#include "core/verdict.h"

namespace ppspec::core {

// Handles are small values, like cudaStream_t; each belongs to one device.
struct Stream {
  int32_t id = -1;
  bool valid() const { return id >= 0; }
  friend bool operator==(Stream, Stream) = default;
};
struct DeviceEvent {
  int32_t id = -1;
  bool valid() const { return id >= 0; }
};
struct Graph {
  int32_t id = -1;
  bool valid() const { return id >= 0; }
};

// A kernel is named by its function and its specialization key: a new key is a new module to load
// under lazy or JIT loading (a Triton re-specialization, a new template instance).
struct KernelRef {
  std::string_view name;
  std::string_view spec;
};

struct KernelLaunch {
  KernelRef kernel{};
  int64_t work = 0;              // elements the kernel touches: drives the cost model
  Time duration = -1;            // a fixed duration instead of the cost model's; -1 = cost model
  std::function<void()> body{};  // simulator: the CPU launcher, run when the kernel executes
  // Real backend: the CUDA launcher, called with the cudaStream_t; without one the real backend
  // runs a kernel that keeps the GPU busy for `duration` (program scenarios).
  std::function<void(void* cuda_stream)> device_body{};
};

class Device {
 public:
  virtual ~Device() = default;
  virtual RankId rank() const = 0;
  virtual ModuleLoading module_loading() const = 0;

  // Streams are created on first use of a name (non-blocking streams, as vLLM uses).
  virtual Stream stream(std::string_view name) = 0;
  virtual std::string_view stream_name(Stream s) const = 0;

  // Allocation. From a running actor it is cudaMalloc: an implicit device synchronisation (R8).
  virtual Buffer alloc(Dtype dtype, Shape shape, std::string_view name) = 0;

  virtual void launch(Stream s, const KernelLaunch& k) = 0;
  // Loads a kernel's module now (warmup), so its first launch needs no load (R8). `device_load`,
  // when given, loads the CUDA function the kernel's device_body launches (the real backend calls
  // it; cudaFuncGetAttributes loads a module under lazy loading).
  virtual void preload(KernelRef k, std::function<void()> device_load = {}) = 0;
  virtual void memcpy(Stream s, const Buffer& dst, const Buffer& src) = 0;
  // cudaMemcpyAsync from / to host memory: `upload` copies `bytes` (taken now) into dst when the
  // stream reaches it; `download` copies src when the stream reaches it, and the host may read `dst`
  // only as CUDA allows: after a synchronisation that covers the copy (the stream, an event
  // recorded after it, the device) or in a later host function on the same stream.
  virtual void upload(Stream s, const Buffer& dst, std::vector<uint8_t> bytes) = 0;
  virtual void download(Stream s, void* dst, const Buffer& src) = 0;
  // cudaLaunchHostFunc: runs `fn` on a host thread when the stream reaches it; the stream's later
  // work waits for it. `fn` must not call the runtime (CUDA forbids CUDA calls there); it may
  // publish events and read host memory that earlier downloads on the stream filled.
  virtual void host_func(Stream s, std::function<void()> fn) = 0;
  virtual void memset(Stream s, const Buffer& dst, uint8_t value) = 0;

  // Pinned host memory (cudaHostAlloc): a buffer the host may touch, and the end of a truly
  // asynchronous copy (from pageable memory the driver stages the bytes; from pinned memory the
  // DMA reads or writes the host's buffer when the stream reaches it). CUDA allows:
  //  * a host read of a `copy_to_host` destination only after a synchronisation that covers the
  //    copy: event_sync of an event recorded after it on its stream, stream_sync of that stream,
  //    device_sync; or in a later host_func on the same stream;
  //  * a host write of a `copy_to_device` source only once the copy has run, by the same edges.
  // Anything else races with the DMA (vLLM #36013: a pinned num_accepted_tokens read in the next
  // step before its non-blocking D2H copy landed; #32799: a pinned buffer rewritten for step N+1
  // while step N's H2D upload from it may not have run). The host declares each access with
  // host_read / host_write, so that the simulator can check it (sim/race_detector.h); the real
  // backend returns the memory. Allocate before serving: the simulator models no implicit
  // synchronisation for cudaHostAlloc (a simplification; cudaFreeHost would take one).
  virtual Buffer alloc_host(Dtype dtype, Shape shape, std::string_view name) = 0;
  // cudaMemcpyAsync device -> pinned host / pinned host -> device on `s` (same sizes).
  virtual void copy_to_host(Stream s, const Buffer& host_dst, const Buffer& src) = 0;
  virtual void copy_to_device(Stream s, const Buffer& dst, const Buffer& host_src) = 0;
  // The host touches (a view of) a pinned buffer now: `write` when it stores into it. Also legal
  // inside a host_func (no CUDA call): there the access is the stream's.
  virtual void host_access(const Buffer& pinned, bool write) = 0;
  template <typename T>
  std::span<const T> host_read(const Buffer& pinned) {
    host_access(pinned, false);
    return {static_cast<const T*>(pinned.data()), pinned.backed() ? static_cast<size_t>(pinned.count()) : 0};
  }
  template <typename T>
  std::span<T> host_write(const Buffer& pinned) {
    host_access(pinned, true);
    return {static_cast<T*>(pinned.data()), pinned.backed() ? static_cast<size_t>(pinned.count()) : 0};
  }

  // A persistent kernel that spins until the named device flag is set (DeepEP/torchcomms style),
  // and a copy that sets the flag (cudaMemcpyAsync of one word) when its stream reaches it.
  virtual void wait_flag(Stream s, std::string_view flag) = 0;
  virtual void set_flag(Stream s, std::string_view flag) = 0;

  virtual DeviceEvent event(std::string_view name) = 0;
  virtual void record(DeviceEvent e, Stream s) = 0;       // cudaEventRecord
  virtual void stream_wait(Stream s, DeviceEvent e) = 0;  // cudaStreamWaitEvent
  virtual void event_sync(DeviceEvent e) = 0;             // cudaEventSynchronize
  virtual void stream_sync(Stream s) = 0;                 // cudaStreamSynchronize
  virtual void device_sync() = 0;                         // cudaDeviceSynchronize

  // CUDA graphs (R9, R10): work issued to a capturing stream is recorded, not run; a launch
  // re-issues it with the captured sizes and buffers.
  virtual void capture_begin(Stream s) = 0;
  virtual Graph capture_end(Stream s) = 0;
  virtual void graph_launch(Graph g, Stream s) = 0;
};

// One rank's handle on one communicator (ncclComm_t). Peers and roots are ranks *of the
// communicator*, as in NCCL. Calls return once enqueued (R1).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string_view name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual RankId global_rank(int comm_rank) const = 0;

  virtual void send(const Buffer& buf, int peer, Stream s, Label label) = 0;
  virtual void recv(const Buffer& buf, int peer, Stream s, Label label) = 0;
  virtual void broadcast(const Buffer& buf, int root, Stream s, Label label) = 0;
  virtual void all_reduce(const Buffer& buf, ReduceOp op, Stream s, Label label) = 0;
  // `send` holds this rank's contribution; `recv` holds size() contributions in rank order.
  virtual void all_gather(const Buffer& send, const Buffer& recv, Stream s, Label label) = 0;
  // PyTorch's all_to_all_single without split sizes (the EP dispatch/combine of an MoE layer):
  // `send` and `recv` each hold size() equal chunks of send.count() / size() elements; chunk j
  // of `send` goes to member j, chunk i of `recv` comes from member i. send.count() must be a
  // multiple of size(), `recv` at least as large, and the two distinct buffers. Unequal splits
  // (input_split_sizes / output_split_sizes) are not modelled.
  virtual void all_to_all(const Buffer& send, const Buffer& recv, Stream s, Label label) = 0;
};

// Engine core <-> worker messages (vLLM uses a shared-memory queue, not NCCL). Unbounded FIFO.
class HostChannel {
 public:
  virtual ~HostChannel() = default;
  virtual void send(std::any message) = 0;
  virtual std::any recv() = 0;  // blocks the calling actor until a message arrives
};

struct ActorSpec {
  std::string name;  // e.g. "rank0.host", "engine"
  RankId rank = -1;  // the device this host thread drives; -1 for the engine core
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  virtual int num_ranks() const = 0;
  virtual Device& device(RankId r) = 0;

  // Declares a communicator before the run (ncclGetUniqueId); members are global ranks.
  virtual void declare_comm(std::string_view name, std::span<const RankId> members) = 0;
  // ncclCommInitRank: collective over the members; blocks the calling actor until all arrive (R1).
  virtual Communicator& comm_init(std::string_view name, RankId me) = 0;

  // ncclGroupStart / ncclGroupEnd for the calling actor. group_end blocks until every operation
  // of the group is enqueued (including first-contact connection setup, R1).
  virtual void group_start() = 0;
  virtual void group_end() = 0;

  virtual HostChannel& channel(std::string_view name) = 0;

  virtual void spawn(ActorSpec spec, std::function<void()> body) = 0;
  virtual void sleep(Time d) = 0;  // host-side delay of the calling actor
  virtual Time now() const = 0;

  virtual EventBus& events() = 0;
  // Publishes an event from any thread of the run (a host function runs on CUDA's thread).
  virtual void publish(Event& e) { events().publish(e); }

  // Tags the calling actor's next calls with a place in the program under test ("file.toml:12"),
  // so that reports can point at it, and the engine step it executes (-1: none), so that events
  // the runtime publishes (a module load) carry the step as a number. A hint: backends may ignore it.
  virtual void set_call_site(std::string_view where, int64_t engine_step = -1) {
    (void)where;
    (void)engine_step;
  }

  // Runs every spawned actor to completion or until a verdict stops the run.
  virtual RunResult run() = 0;
};

}  // namespace ppspec::core
