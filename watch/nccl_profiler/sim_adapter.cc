#include "watch/nccl_profiler/sim_adapter.h"

#include <dlfcn.h>

#include <cstdlib>
#include <fmt/format.h>
#include <memory>
#include <stdexcept>

#include "core/assert.h"
#include "core/hash.h"

namespace ppspec::nccl_profiler {
namespace {

// The simulator's clock while the adapter calls in: the plugin's harness clock reads it.
core::Time g_now = 0;
int64_t sim_clock() { return g_now; }
bool g_adapter_alive = false;

}  // namespace

// What ncclFuncToString names (NCCL 2.28).
const char* nccl_func_name(core::OpKind k) {
  switch (k) {
    case core::OpKind::send: return "Send";
    case core::OpKind::recv: return "Recv";
    case core::OpKind::broadcast: return "Broadcast";
    case core::OpKind::all_reduce: return "AllReduce";
    case core::OpKind::all_gather: return "AllGather";
    case core::OpKind::all_to_all: return "AlltoAll";
    case core::OpKind::reduce: return "Reduce";
    case core::OpKind::reduce_scatter: return "ReduceScatter";
  }
  return "Invalid";
}

// What ncclDatatypeToString names (NCCL 2.28: uint8 falls to its default, "Unknown").
const char* nccl_datatype_name(core::Dtype d) {
  switch (d) {
    case core::Dtype::i8: return "ncclInt8";
    case core::Dtype::u8: return "Unknown";
    case core::Dtype::i32: return "ncclInt32";
    case core::Dtype::u32: return "ncclUint32";
    case core::Dtype::i64: return "ncclInt64";
    case core::Dtype::u64: return "ncclUint64";
    case core::Dtype::f16: return "ncclFloat16";
    case core::Dtype::bf16: return "ncclBfloat16";
    case core::Dtype::f32: return "ncclFloat32";
    case core::Dtype::f64: return "ncclFloat64";
  }
  return "Unknown";
}

const PluginLibrary& PluginLibrary::open(const std::string& path) {
  static std::map<std::string, std::unique_ptr<PluginLibrary>>
      opened;  // dlopen'd once, never closed (as NCCL keeps it)
  if (auto it = opened.find(path); it != opened.end()) return *it->second;
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr)
    throw std::runtime_error(fmt::format("cannot load the NCCL profiler plugin {}: {}", path, ::dlerror()));
  auto lib = std::make_unique<PluginLibrary>();
  lib->path_ = path;
  lib->v5_ = static_cast<const abi::ProfilerTable*>(::dlsym(h, "ncclProfiler_v5"));
  lib->v6_ = static_cast<const abi::ProfilerTable*>(::dlsym(h, "ncclProfiler_v6"));
  lib->hooks_ = static_cast<const HooksTable*>(::dlsym(h, "ppspecProfilerHooks_v1"));
  if (lib->hooks_ == nullptr || lib->hooks_->version != kHooksVersion)
    throw std::runtime_error(
        fmt::format("{} has no ppspecProfilerHooks_v1 of version {}: not this ppspec's plugin", path, kHooksVersion));
  return *opened.emplace(path, std::move(lib)).first->second;
}

const abi::ProfilerTable* PluginLibrary::table(int interface) const {
  return interface == 5 ? v5_ : interface == 6 ? v6_ : nullptr;
}

std::string built_plugin_path() {
  if (const char* p = std::getenv("PPSPEC_NCCL_PROFILER"); p != nullptr && *p != '\0') return p;
  return PPSPEC_NCCL_PROFILER_PATH;
}

SimAdapter::SimAdapter(const PluginLibrary& lib, int interface, const std::string& dir,
                       std::function<void(core::Time)> flushed)
    : lib_(lib), table_(*lib.table(interface)), on_flush_(std::move(flushed)) {
  PPSPEC_ASSERT(lib.table(interface) != nullptr, "the plugin {} has no table for interface {}", lib.path(), interface);
  PPSPEC_ASSERT(!g_adapter_alive, "one simulated job records through the plugin at a time");
  g_adapter_alive = true;
  g_now = 0;
  lib_.hooks().set_clock(&sim_clock);
  if (lib_.hooks().begin_job(dir.c_str()) != 0) {
    g_adapter_alive = false;
    throw std::runtime_error(fmt::format("the plugin cannot record into {}", dir));
  }
}

SimAdapter::~SimAdapter() {
  if (!finished_) finish();
  lib_.hooks().set_rank(-1);
  lib_.hooks().set_call_site(nullptr);
  g_adapter_alive = false;
}

void SimAdapter::finish(bool halted) {
  if (halted) end_halted_groups(g_now);
  for (const auto& [key, ctx] : contexts_) table_.finalize(ctx);
  lib_.hooks().end_job();
  finished_ = true;
  if (on_flush_) on_flush_(g_now);
}

void SimAdapter::set_time(core::Time t) { g_now = t; }

void SimAdapter::flushed(core::Time t) {
  lib_.hooks().flush();
  if (on_flush_) on_flush_(t);
}

void* SimAdapter::context(core::RankId rank, std::string_view comm) const {
  const auto it = contexts_.find(std::make_pair(rank, std::string(comm)));
  PPSPEC_ASSERT(it != contexts_.end(), "rank{} calls on '{}' before its init reached the plugin", rank, comm);
  return it->second;
}

void* SimAdapter::start(void* ctx, abi::EventDescr& d) {
  void* handle = nullptr;
  table_.start_event(ctx, &handle, &d);
  return handle;
}

void SimAdapter::comm_initialised(core::Time t, core::RankId rank, std::string_view comm, int comm_rank,
                                  int comm_size) {
  set_time(t);
  lib_.hooks().set_rank(rank);
  void* ctx = nullptr;
  int mask = 0;
  const std::string name(comm);
  // NCCL's commHash is a hash of the unique id; one of the name serves: equal on every member.
  const uint64_t hash = core::fnv1a_bytes(name.data(), name.size());
  if (table_.init(&ctx, hash, &mask, name.c_str(), 1, comm_size, comm_rank, nullptr) != abi::kSuccess) ctx = nullptr;
  contexts_.emplace(std::make_pair(rank, name), ctx);
  flushed(t);
}

}  // namespace ppspec::nccl_profiler
