#include "sim/comm_system.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "core/assert.h"
#include "sim/device.h"
#include "sim/graph.h"
#include "sim/sim_runtime.h"
#include "sim/stream.h"

namespace ppspec::sim {

// ---------------------------------------------------------------------------------------------
// Declaration and initialisation

SimComm& CommSystem::declare(std::string_view name, std::span<const core::RankId> members) {
  if (find(name) != nullptr) throw std::invalid_argument(fmt::format("communicator '{}' declared twice", name));
  auto c = std::make_unique<SimComm>();
  c->index = static_cast<int>(comms_.size());
  c->name = std::string(name);
  c->members.assign(members.begin(), members.end());
  const auto n = c->members.size();
  for (size_t i = 0; i < n; ++i) c->crank_index.emplace_back(c->members[i], static_cast<int>(i));
  std::sort(c->crank_index.begin(), c->crank_index.end());
  for (size_t i = 1; i < n; ++i)
    if (c->crank_index[i].first == c->crank_index[i - 1].first)
      throw std::invalid_argument(
          fmt::format("communicator '{}': rank {} listed twice", name, c->crank_index[i].first));
  c->ranks.resize(n);
  c->channels.reset(n);
  for (size_t i = 0; i < n; ++i) c->handles.push_back(std::make_unique<SimCommHandle>(*this, *c, static_cast<int>(i)));
  setup_.add(*c);
  comms_.push_back(std::move(c));
  return *comms_.back();
}

SimComm* CommSystem::find(std::string_view name) {
  for (auto& c : comms_)
    if (c->name == name) return c.get();
  return nullptr;
}

core::Communicator& CommSystem::init(SimComm& comm, core::RankId me) {
  const int crank = comm.crank_of(me);
  if (crank < 0) throw std::invalid_argument(fmt::format("rank{} is not a member of '{}'", me, comm.name));
  setup_.init(comm, crank);
  return *comm.handles[static_cast<size_t>(crank)];
}

// ---------------------------------------------------------------------------------------------
// Posting (host side)

void CommSystem::post(PartSpec spec) {
  // NCCL discards a collective of no elements before it takes a place in the communicator's order
  // (taskAppend: "Empty collectives can be discarded"): it is never posted, paired or waited for.
  if (!core::is_p2p(spec.desc.kind) && spec.desc.count == 0) return;
  SimDevice& dev = device_of(*spec.comm, spec.crank);
  if (!spec.comm->ranks[static_cast<size_t>(spec.crank)].initialised)
    throw std::logic_error(fmt::format("rank{} uses communicator '{}' before comm_init", dev.rank(), spec.comm->name));
  dev.enter();
  HostState& host = rt_.host_state();
  spec.origin = host.call_site;
  if (spec.stream->capture() != nullptr) spec.capture_id = next_capture_id_++;
  if (host.group_depth > 0) {
    if (spec.stream->capture() == nullptr)
      register_observed(spec);
    else
      observe_call(spec, -1);
    host.pending.push_back(std::move(spec));
    dev.leave();
    return;
  }
  if (GraphRec* g = spec.stream->capture()) {
    observe_call(spec, -1);
    capture_.capture(std::move(spec), *g);
    observe_group_end();
    dev.leave();
    return;
  }
  std::vector<PartSpec>& parts = host.scratch;
  parts.push_back(std::move(spec));
  // NCCL tells its profiler of the call before its group's end refuses an unmatched send to oneself.
  if (rt_.nccl_observer() != nullptr && pairing_.unmatched_self(parts) != nullptr)
    observe_call(parts.back(), pairing_.next_op_id());
  pairing_.reject_unmatched_self(parts);  // an ungrouped call is a group of one
  register_observed(parts.back());
  launch_live(parts);
  observe_group_end();
  dev.leave();
}

ObservedCall CommSystem::observed(const PartSpec& p) {
  const HostState& host = rt_.host_state();
  ObservedCall c;
  c.rank = p.comm->members[static_cast<size_t>(p.crank)];
  c.comm = p.comm->name;
  c.comm_rank = p.crank;
  c.comm_size = static_cast<int>(p.comm->size());
  c.peer_comm_rank = p.peer;
  c.desc = p.desc;
  c.stream = p.stream;
  c.host = &host;
  c.origin = p.origin;
  c.grouped = host.group_depth > 0;
  c.op_id = p.id;
  c.capture_id = p.capture_id;
  return c;
}

void CommSystem::observe_call(const PartSpec& p, int64_t op_id) {
  NcclObserver* o = rt_.nccl_observer();
  if (o == nullptr) return;
  ObservedCall call = observed(p);
  call.op_id = op_id;
  o->called(rt_.world().now(), call);
}

// The observer hears of the call first, with the id posting gives it: a post that pairs
// mismatched operations stops the run, and NCCL's profiler had heard of the call by then.
void CommSystem::register_observed(PartSpec& spec) {
  observe_call(spec, pairing_.next_op_id());
  pairing_.register_post(spec);
}

void CommSystem::observe_group_end() {
  if (NcclObserver* o = rt_.nccl_observer()) o->group_ended(rt_.world().now(), &rt_.host_state());
}

void CommSystem::group_end_flush() {
  HostState& host = rt_.host_state();
  capture_.reject_connect_in_capture(host.pending);
  std::vector<PartSpec>& live = host.scratch;
  host.group_issue.clear();
  capture_.route_group(host.pending, live);
  host.pending.clear();
  if (!live.empty()) {
    pairing_.reject_unmatched_self(live);
    launch_live(live);
  }
  observe_group_end();
}

void CommSystem::replay(const std::vector<PartSpec>& parts, SimStream& stream) {
  std::vector<PartSpec>& live = rt_.host_state().scratch;
  NcclObserver* o = rt_.nccl_observer();
  for (const PartSpec& p : parts) {
    PartSpec q = p;
    q.stream = &stream;
    q.desc.captured = true;
    // A replay's tasks are built by the graph's host node, before its kernel pairs anything.
    if (o != nullptr) {
      PartSpec told = q;
      told.id = pairing_.next_op_id();
      o->task_built(rt_.world().now(), observed(told));
    }
    pairing_.register_post(q);
    live.push_back(std::move(q));
  }
  launch_live(live, false);
}

void CommSystem::launch_live(std::vector<PartSpec>& live, bool observe_tasks) {
  setup_.connect(live);
  // NCCL builds a group's tasks once its connections exist, just before the kernel launch.
  if (NcclObserver* o = rt_.nccl_observer(); o != nullptr && observe_tasks)
    for (const PartSpec& p : live) o->task_built(rt_.world().now(), observed(p));
  launcher_.launch(live);
  PPSPEC_ASSERT(live.empty(), "launch leaves no part behind");
}

}  // namespace ppspec::sim
