#include "sim/sim_runtime.h"

#include <fmt/format.h>
#include <stdexcept>

#include "core/finding_kinds.h"
#include "core/error.h"
#include "sim/deadlock_detector.h"

namespace ppspec::sim {

SimRuntime::SimRuntime(int num_ranks, const SimConfig& config, std::unique_ptr<SchedulePolicy> policy, uint64_t seed)
    : world_(config, std::move(policy), seed, bus_), comms_(*this) {
  if (num_ranks < 1) throw std::invalid_argument("a runtime needs at least one rank");
  if (config.detect_races) races_ = std::make_unique<RaceDetector>(world_);
  for (int r = 0; r < num_ranks; ++r) devices_.push_back(std::make_unique<SimDevice>(*this, r));
}

SimRuntime::~SimRuntime() = default;

void SimRuntime::take_memory(size_t bytes, core::RankId rank, std::string_view what) {
  const auto budget = static_cast<size_t>(world_.config().memory_budget_bytes);
  if (bytes > budget || memory_taken_ > budget - bytes)
    throw core::CapacityError(
        fmt::format("rank{} allocates '{}' of {} MiB (with its shadow bytes): the run would hold {} MiB of simulated "
                    "device memory, "
                    "more than its budget of {} MiB ([runtime] memory_budget_mb)",
                    rank, what, bytes >> 20, (memory_taken_ + bytes) >> 20, budget >> 20));
  memory_taken_ += bytes;
}

HostState& SimRuntime::host_state() {
  Fiber& f = world_.current();
  if (f.host == nullptr) [[unlikely]]
    core::throw_formatted<std::logic_error>("{} is not a host thread", f.name);
  return *f.host;
}

void SimRuntime::declare_comm(std::string_view name, std::span<const core::RankId> members) {
  if (members.empty()) throw std::invalid_argument(fmt::format("communicator '{}' has no members", name));
  for (core::RankId r : members) (void)device_impl(r);
  comms_.declare(name, members);
}

core::Communicator& SimRuntime::comm_init(std::string_view name, core::RankId me) {
  SimComm* c = comms_.find(name);
  if (c == nullptr) throw std::invalid_argument(fmt::format("no communicator '{}'", name));
  return comms_.init(*c, me);
}

void SimRuntime::group_start() {
  HostState& h = host_state();
  if (h.group_depth++ == 0) h.group_id = h.groups_opened++;
  world_.yield();
}

void SimRuntime::group_end() {
  HostState& h = host_state();
  if (h.group_depth == 0) throw std::logic_error("group_end without group_start");
  if (--h.group_depth == 0) {
    comms_.group_end_flush();
    h.group_id = -1;
  }
  world_.yield();
}

core::HostChannel& SimRuntime::channel(std::string_view name) {
  auto it = channels_.find(name);
  if (it == channels_.end())
    it = channels_.emplace(std::string(name), std::make_unique<SimHostChannel>(world_, std::string(name))).first;
  return *it->second;
}

void SimRuntime::spawn(core::ActorSpec spec, std::function<void()> body) {
  if (spec.rank >= num_ranks())
    throw std::invalid_argument(fmt::format("actor {} names rank {}", spec.name, spec.rank));
  HostState* hs = &hosts_.emplace_back();
  Fiber& f = world_.spawn(spec.name, FiberKind::host, spec.rank, [this, body = std::move(body)] {
    Fiber& self = world_.current();
    if (bus_.active()) {
      core::Event e = world_.event(core::EventKind::actor_start, self.rank, self.name);
      bus_.publish(e);
    }
    body();
    if (bus_.active()) {
      core::Event e = world_.event(core::EventKind::actor_end, self.rank, self.name);
      bus_.publish(e);
    }
  });
  f.host = hs;
}

void SimRuntime::sleep(core::Time d) { world_.sleep(d); }

void SimRuntime::watch_blocking_calls() {
  // Only a rank with several host threads can see the release of an R8 hazard happen (with one
  // thread the release would wait for the blocked caller): only their threads own clock
  // components, and with none every clock stays empty and the simulator keeps none.
  std::vector<std::vector<const Fiber*>> hosts(devices_.size());
  for (const auto& f : world_.fibers())
    if (f->kind == FiberKind::host && f->rank >= 0) hosts[static_cast<size_t>(f->rank)].push_back(f.get());
  bool any = false;
  for (size_t r = 0; r < hosts.size(); ++r) {
    if (hosts[r].size() < 2) continue;
    for (const auto& f : world_.fibers())
      if (f->kind == FiberKind::host && f->rank == static_cast<core::RankId>(r)) f->owns_component = true;
    devices_[r]->watch_blocking(std::move(hosts[r]));
    any = true;
  }
  // The race detector needs happens-before between streams: every stream owns a component.
  world_.set_clocks_on(any || races_ != nullptr);
}

void SimRuntime::note_stuck_hazards(WaitGraph& graph) {
  // R8 hazards that only a run that can no longer move shows (sim/blocking_hazards.h): blocking
  // calls whose waits lead back to them, and items never released on ranks that keep clocks.
  for (const auto& f : world_.fibers())
    if (f->kind == FiberKind::host && f->state == FiberState::blocked && f->wait.kind == WaitKind::device_drain)
      f->wait.device->note_if_stuck_in_call(*f, graph);
  for (const auto& d : devices_) d->blocking().on_stuck(graph, *d);
}

// Collective mismatches still waiting for members when the run stopped (nothing could run, or
// another finding stopped it): each came before the stop. Reported, the first decides the
// verdict; emulated, they are notes (R5).
void SimRuntime::settle_open_mismatches(bool report) {
  std::vector<core::Finding> open = comms_.take_open_mismatches();
  for (size_t i = 0; i < open.size(); ++i) {
    if (report && i == 0)
      world_.findings().insert(world_.findings().begin(), std::move(open[i]));
    else
      world_.notes().push_back(std::move(open[i]));
  }
}

namespace {

// The notes of verdict `v` become findings, in their order.
void promote_notes_of_verdict(core::RunResult& r, core::Verdict v) {
  for (auto it = r.notes.begin(); it != r.notes.end();) {
    if (it->verdict == v) {
      r.findings.push_back(std::move(*it));
      it = r.notes.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace

core::RunResult SimRuntime::run() {
  if (ran_) throw std::logic_error("a SimRuntime runs once");
  ran_ = true;
  comms_.watch_order_inversions(num_ranks());
  watch_blocking_calls();
  const bool report_mismatch = world_.config().on_mismatch == core::OnMismatch::report;
  world_.run([this, report_mismatch](World& w) {
    // A collective mismatch whose report waited for the members that never came is what went
    // wrong first, and the standstill its consequence: settle_open_mismatches reports it.
    if (report_mismatch && comms_.has_open_mismatches()) return;
    if (auto f = explain_deadlock(*this, [this](WaitGraph& g) { note_stuck_hazards(g); })) {
      f->time = w.now();
      f->sched_step = w.steps();
      w.findings().push_back(std::move(*f));
    }
  });
  settle_open_mismatches(report_mismatch);

  if (world_.findings().empty() && !world_.halted()) {
    if (auto f = comms_.unmatched()) {
      f->time = world_.now();
      f->sched_step = world_.steps();
      world_.findings().push_back(std::move(*f));
    }
  }
  core::RunResult r;
  r.findings = world_.findings();
  r.notes = world_.notes();
  if (auto inv = comms_.inversions().analyze()) {
    inv->time = world_.now();
    inv->sched_step = world_.steps();
    r.notes.push_back(std::move(*inv));
  }
  if (world_.policy_diverged()) {
    core::Finding f;
    f.verdict = core::Verdict::nondeterminism;
    f.kind = core::FindingKind::replay_diverged;
    f.summary = "the recorded schedule does not fit this run: the program or the simulator changed";
    r.findings.insert(r.findings.begin(), std::move(f));
  }
  if (r.findings.empty() && comms_.mismatch_seen()) promote_notes_of_verdict(r, core::Verdict::fifo_misalignment);
  if (r.findings.empty() && world_.config().strict) promote_notes_of_verdict(r, core::Verdict::hazard);
  r.verdict = r.findings.empty() ? core::Verdict::pass : r.findings.front().verdict;

  r.stats.sched_steps = world_.steps();
  r.stats.sim_time = world_.now();
  r.stats.ops_posted = comms_.ops_posted();
  r.stats.pairs = comms_.pairs();
  r.stats.fibers = world_.fibers().size();
  r.decisions = world_.decisions();
  if (bus_.active()) {
    core::Event e;
    e.t = world_.now();
    e.kind = core::EventKind::verdict;
    e.text = core::to_string(r.verdict);
    bus_.publish(e);
  }
  r.stats.events = bus_.published();
  return r;
}

}  // namespace ppspec::sim
