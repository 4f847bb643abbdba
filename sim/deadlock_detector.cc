#include "sim/deadlock_detector.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/finding_kinds.h"
#include "core/assert.h"
#include "sim/comm_system.h"
#include "sim/device.h"
#include "sim/sim_runtime.h"
#include "sim/stream.h"

namespace ppspec::sim {
namespace {

// What a stuck fiber waits for: one fiber (`to`), any member of a group (the live host threads of
// a rank, a channel's senders, every host thread), or nobody (neither: the chain ends there). One
// link stands for a whole group, so that a thousand fibers waiting for a rank of a thousand host
// threads make a thousand links, not a million edges.
struct Link {
  const Fiber* to = nullptr;
  int group = -1;
  std::string_view label;                  // why, in words: a literal or words the Explainer owns
  const VectorClock* clock = nullptr;      // what the wait needs that has happened (R8 hazards), if anything
  const core::Culprit* culprit = nullptr;  // where nobody can act: the rank that never posts what is awaited
};

struct Group {
  std::vector<const Fiber*> members;  // live host threads, in creation order
  bool skip_waiter = false;           // the waiter itself is no candidate (a channel's receiver)
  // CycleSearch's state: the members before `cursor` were visited; `on_path` holds the search
  // path positions of the members on it, bottom first.
  size_t cursor = 0;
  std::vector<size_t> on_path;
};

struct Node {
  const Fiber* fiber = nullptr;
  std::string state;   // what it is doing, in words
  std::string short_;  // a few words for the one-line chain
  core::Site site;
  std::vector<Link> links;
};

// fibers[i] waits for fibers[i + 1] because of why[i]; in a cycle the last waits for the first,
// otherwise the chain ends at `end`, where nobody can act.
struct Chain {
  std::vector<const Fiber*> fibers;
  std::vector<std::string_view> why;
  std::vector<const core::Culprit*> owed;  // in a cycle, per wait: the operation it awaits unposted, if any
  bool cycle = false;
  std::string_view end;
  const core::Culprit* end_culprit = nullptr;
};

// A collective's hold-up, explained once for all of its waiting members.
struct CollectiveLinks {
  CollectiveHold hold;
  std::vector<Link> links;
};

// "event 'ready', recorded on rank0.side at prog.toml:12": which record a wait needs, so that a
// reader can find both lines of the program (the wait's own line is its node's origin).
std::string event_words(const WaitInfo& w) {
  PPSPEC_ASSERT(w.event != nullptr, "an event wait without its event");
  std::string s = fmt::format("event '{}', recorded on {}", w.event->event, w.stream->full_name());
  if (!w.event->recorded_at.empty()) s += fmt::format(" at {}", w.event->recorded_at);
  return s;
}

class Explainer {
 public:
  explicit Explainer(const SimRuntime& rt);

  static bool stuck(const Fiber& f) {
    if (f.state == FiberState::finished) return false;
    if (f.kind == FiberKind::stream) return f.stream != nullptr && !f.stream->idle();
    return true;
  }
  void explain(const std::vector<const Fiber*>& stuck);  // before any other call
  const Node* node(const Fiber* f) const {
    const int i = node_of_[f->id];
    return i < 0 ? nullptr : &nodes_[static_cast<size_t>(i)];
  }
  Group& group(int g) { return groups_[static_cast<size_t>(g)]; }
  const Group& group(int g) const { return groups_[static_cast<size_t>(g)]; }
  const std::vector<int>& groups_of(const Fiber* f) const { return groups_of_[f->id]; }
  size_t fiber_count() const { return node_of_.size(); }
  // Ranks a stuck fiber waits for that have no live host thread left, first seen first.
  const std::vector<core::RankId>& absent_ranks() const { return absent_ranks_; }
  // Where the waits from `starts` lead (sim/wait_graph.h).
  StuckFrontier frontier(const std::vector<Link>& starts) const;
  void add_blocker(std::vector<Link>& links, Blocker b);
  void to_rank_hosts(std::vector<Link>& links, core::RankId r, std::string_view why,
                     const core::Culprit* culprit = nullptr);

 private:
  Node explain_one(const Fiber& f);
  void explain_host(const Fiber& f, const WaitInfo& w, Node& n);
  void explain_channel(const Fiber& f, const SimHostChannel& ch, Node& n);
  void explain_stream(const WaitInfo& w, Node& n);
  void explain_peer(const CommKernel& k, Node& n);
  void explain_flag(const WaitInfo& w, Node& n);
  int make_group(std::vector<const Fiber*> members, bool skip_waiter);
  int rank_group(core::RankId r);
  const std::vector<Link>& connect_links(const Connection& c);
  const std::vector<Link>& init_links(const CommInit& init);
  const CollectiveLinks& collective(const SimComm& comm, int64_t cseq);
  std::string_view word(std::string s) { return words_.emplace_back(std::move(s)); }

  const SimRuntime& rt_;
  std::vector<int> node_of_;  // by fiber id; -1 for a fiber that is not stuck
  std::vector<Node> nodes_;
  std::vector<Group> groups_;
  std::vector<std::vector<int>> groups_of_;               // by fiber id
  std::vector<std::vector<const Fiber*>> hosts_by_rank_;  // live host threads
  std::vector<int> rank_group_;                           // by rank; -1 until needed
  int all_hosts_group_ = -1;
  // Keyed by address for look-ups only, never iterated: no address decides the report's order.
  std::map<const SimHostChannel*, int> sender_group_;
  std::map<const Connection*, std::vector<Link>> connect_links_;
  std::map<const CommInit*, std::vector<Link>> init_links_;
  std::map<std::pair<const SimComm*, int64_t>, CollectiveLinks> collectives_;
  std::deque<std::string> words_;       // a deque: words never move, links view them
  std::deque<core::Culprit> culprits_;  // likewise
  std::vector<core::RankId> absent_ranks_;
  std::vector<uint8_t> absent_seen_;  // by rank
};

Explainer::Explainer(const SimRuntime& rt) : rt_(rt) {
  const auto& fibers = rt.world().fibers();
  const auto ranks = static_cast<size_t>(rt.num_ranks());
  node_of_.assign(fibers.size(), -1);
  groups_of_.resize(fibers.size());
  hosts_by_rank_.resize(ranks);
  rank_group_.assign(ranks, -1);
  absent_seen_.assign(ranks, 0);
  for (const auto& f : fibers) {
    PPSPEC_ASSERT(f->id < fibers.size() && fibers[f->id].get() == f.get());
    if (f->kind == FiberKind::host && f->state != FiberState::finished && f->rank >= 0 &&
        static_cast<size_t>(f->rank) < ranks)
      hosts_by_rank_[static_cast<size_t>(f->rank)].push_back(f.get());
  }
}

void Explainer::explain(const std::vector<const Fiber*>& stuck) {
  PPSPEC_ASSERT(nodes_.empty());
  nodes_.reserve(stuck.size());
  for (const Fiber* f : stuck) {
    node_of_[f->id] = static_cast<int>(nodes_.size());
    nodes_.push_back(explain_one(*f));
  }
}

StuckFrontier Explainer::frontier(const std::vector<Link>& starts) const {
  // Breadth first over the links, each fiber and each group once: linear in the graph. A group
  // that skips its waiter (a channel's receiver) is expanded whole: the member it leaves out is
  // the receiver itself, which waits for the others and so adds nothing they do not.
  StuckFrontier out;
  std::vector<uint8_t> seen(fiber_count(), 0);
  std::vector<uint8_t> expanded(groups_.size(), 0);
  std::vector<const Fiber*> queue;
  auto visit = [&](const Fiber* f) {
    if (node(f) == nullptr || seen[f->id]) return;
    seen[f->id] = 1;
    queue.push_back(f);
  };
  auto follow = [&](const Link& l) {
    if (l.clock != nullptr) out.happened.join(*l.clock);
    if (l.to != nullptr) {
      visit(l.to);
    } else if (l.group >= 0 && !expanded[static_cast<size_t>(l.group)]) {
      expanded[static_cast<size_t>(l.group)] = 1;
      for (const Fiber* m : group(l.group).members) visit(m);
    }
  };
  for (const Link& l : starts) follow(l);
  for (size_t i = 0; i < queue.size(); ++i) {
    const Fiber* f = queue[i];
    if (f->kind == FiberKind::host) {
      out.hosts.push_back(f);
      out.happened.join(f->clock);
    } else if (const WorkItem* head = f->stream->head()) {
      out.happened.join(head->enqueue_clock());
    }
    for (const Link& l : node(f)->links) follow(l);
  }
  return out;
}

// The wait-for graph as the R8 hazard rule reads it (sim/wait_graph.h).
class StuckGraph final : public WaitGraph {
 public:
  StuckGraph(Explainer& ex, const SimRuntime& rt) : ex_(ex), rt_(rt) {}

  StuckFrontier behind(const SimStream& s) override { return ex_.frontier({Link{s.fiber(), -1, {}, nullptr}}); }

  StuckFrontier release_of(const CommKernel& k) override {
    std::vector<Link> starts;
    for (Blocker& b : rt_.comms().release_blockers(k)) ex_.add_blocker(starts, std::move(b));
    return ex_.frontier(starts);
  }

  StuckFrontier release_of(const SimFlag& flag, const SimDevice& dev) override {
    std::vector<Link> starts;
    for (const auto& st : dev.streams())
      if (const WorkItem* set = st->queued_set_of(&flag))
        starts.push_back(Link{st->fiber(), -1, {}, &set->enqueue_clock()});
    if (starts.empty()) ex_.to_rank_hosts(starts, dev.rank(), "has not issued set_flag");
    return ex_.frontier(starts);
  }

 private:
  Explainer& ex_;
  const SimRuntime& rt_;
};

int Explainer::make_group(std::vector<const Fiber*> members, bool skip_waiter) {
  const int g = static_cast<int>(groups_.size());
  for (const Fiber* m : members) {
    PPSPEC_ASSERT(m->kind == FiberKind::host && stuck(*m), "group members are live host threads, all of them stuck");
    groups_of_[m->id].push_back(g);
  }
  groups_.push_back(Group{std::move(members), skip_waiter, 0, {}});
  return g;
}

int Explainer::rank_group(core::RankId r) {
  int& g = rank_group_[static_cast<size_t>(r)];
  if (g < 0) g = make_group(hosts_by_rank_[static_cast<size_t>(r)], false);
  return g;
}

void Explainer::to_rank_hosts(std::vector<Link>& links, core::RankId r, std::string_view why,
                              const core::Culprit* culprit) {
  PPSPEC_ASSERT(r >= 0 && static_cast<size_t>(r) < hosts_by_rank_.size());
  if (!hosts_by_rank_[static_cast<size_t>(r)].empty()) {
    links.push_back({nullptr, rank_group(r), why, nullptr, culprit});
    return;
  }
  links.push_back({nullptr, -1, word(fmt::format("{}, and rank{} has no running host thread left to do it", why, r)),
                   nullptr, culprit});
  if (!absent_seen_[static_cast<size_t>(r)]) {
    absent_seen_[static_cast<size_t>(r)] = 1;
    absent_ranks_.push_back(r);
  }
}

void Explainer::add_blocker(std::vector<Link>& links, Blocker b) {
  const std::string_view why = word(std::move(b.what));
  if (b.kind == Blocker::Kind::stream)
    links.push_back({b.stream->fiber(), -1, why, b.clock});
  else if (b.kind == Blocker::Kind::rank_host)
    to_rank_hosts(links, b.rank, why, b.culprit.rank >= 0 ? &culprits_.emplace_back(std::move(b.culprit)) : nullptr);
  else
    links.push_back({nullptr, -1, why, b.clock});
}

const std::vector<Link>& Explainer::connect_links(const Connection& c) {
  auto [it, made] = connect_links_.try_emplace(&c);
  if (made) {
    for (size_t i = 0; i < c.parties.size(); ++i)
      if (!c.arrived[i])
        to_rank_hosts(
            it->second, c.parties[i],
            word(fmt::format("rank{} has not reached its side of the connection", c.parties[i])),
            c.comm == nullptr ? nullptr : &culprits_.emplace_back(rt_.comms().never_connected(c, c.parties[i])));
  }
  return it->second;
}

const std::vector<Link>& Explainer::init_links(const CommInit& init) {
  auto [it, made] = init_links_.try_emplace(&init);
  if (made) {
    for (const auto& c : rt_.comms().comms()) {
      if (&rt_.comms().connections().init_of(*c) != &init) continue;
      for (size_t i = 0; i < c->members.size(); ++i)
        if (!init.arrived[i])
          to_rank_hosts(it->second, c->members[i],
                        word(fmt::format("rank{} has not called comm_init('{}')", c->members[i], c->name)));
    }
  }
  return it->second;
}

const CollectiveLinks& Explainer::collective(const SimComm& comm, int64_t cseq) {
  auto [it, made] = collectives_.try_emplace({&comm, cseq});
  if (made) {
    CollectiveLinks& c = it->second;
    c.hold = rt_.comms().collective_hold(comm, cseq);
    for (Blocker& b : c.hold.members) add_blocker(c.links, b);
  }
  return it->second;
}

Node Explainer::explain_one(const Fiber& f) {
  Node n;
  n.fiber = &f;
  n.site.rank = f.rank;
  n.site.actor = f.name;
  if (f.kind == FiberKind::host) {
    n.site.origin = f.host != nullptr ? std::string(f.host->call_site) : "";
    explain_host(f, f.wait, n);
  } else {
    explain_stream(f.wait, n);
  }
  n.site.what = n.state;
  return n;
}

void Explainer::explain_host(const Fiber& f, const WaitInfo& w, Node& n) {
  switch (w.kind) {
    case WaitKind::stream_sync:
      n.state = fmt::format("blocked in stream_sync({})", w.stream->full_name());
      n.site.wait = core::SiteWait::stream_sync;
      n.short_ = "stream_sync";
      n.links.push_back({w.stream->fiber(), -1, "the stream has unfinished work"});
      return;
    case WaitKind::launch_queue:
      n.state = fmt::format(
          "blocked launching onto {}: its launch queue is full ({} pending items; a CUDA launch "
          "blocks when the device's command queue is)",
          w.stream->full_name(), kStreamQueueMax);
      n.short_ = "launch queue full";
      n.site.wait = core::SiteWait::launch_queue;
      n.links.push_back({w.stream->fiber(), -1, "the stream must complete work to make room"});
      return;
    case WaitKind::event_sync:
      // The host's own call site is this node's origin: the line of the wait.
      n.state = fmt::format("blocked in event_sync of {}", event_words(w));
      n.short_ = "event_sync";
      n.site.wait = core::SiteWait::event_sync;
      n.links.push_back(
          {w.stream->fiber(), -1, word(fmt::format("has not reached the record of event '{}'", w.event->event))});
      return;
    case WaitKind::device_drain: {
      const SimDevice& dev = *w.device;
      if (w.drain == BlockingKind::module_load) {
        n.state = fmt::format(
            "blocked in the module load of {} ({} loading): it holds the context lock and waits "
            "for every earlier kernel on device {} to finish (R8)",
            dev.loading(), core::to_string(dev.module_loading()), dev.rank());
        n.short_ = "module load";
        n.site.wait = core::SiteWait::module_load;
      } else {
        n.state = fmt::format("blocked in {}: waits for every earlier kernel on device {} to finish (R8)", w.what,
                              dev.rank());
        n.short_ = std::string(w.what);
        n.site.wait = core::SiteWait::device_drain;
      }
      for (const auto& s : dev.streams())
        if (!s->idle()) n.links.push_back({s->fiber(), -1, "the device must drain"});
      return;
    }
    case WaitKind::context_lock:
      n.state = fmt::format("blocked on device {}'s context lock, held by {} (loading {})", w.device->rank(),
                            w.holder->name, w.device->loading());
      n.short_ = "context lock";
      n.site.wait = core::SiteWait::context_lock;
      n.links.push_back({w.holder, -1, "holds the context lock"});
      return;
    case WaitKind::connect:
      n.state = fmt::format("blocked in first-contact setup of the {} (NCCL_RUNTIME_CONNECT, R1)", w.connection->what);
      n.short_ = "connect";
      n.site.wait = core::SiteWait::connect;
      n.links = connect_links(*w.connection);
      return;
    case WaitKind::comm_init:
      n.state = "blocked in comm init (collective over all members, R1)";
      n.short_ = "comm init";
      n.site.wait = core::SiteWait::comm_init;
      n.links = init_links(*w.init);
      return;
    case WaitKind::channel: explain_channel(f, *w.channel, n); return;
    default: n.state = fmt::format("waiting ({})", w.what); n.short_ = std::string(w.what);
  }
}

void Explainer::explain_channel(const Fiber& f, const SimHostChannel& ch, Node& n) {
  n.state = fmt::format("blocked receiving from host channel '{}'", ch.name());
  n.short_ = "channel recv";
  n.site.wait = core::SiteWait::channel;
  // Who sent on this channel before is who sends next (the engine core to a worker, the last
  // stage to the engine core); a channel nobody has used yet may hear from any host thread.
  int g = -1;
  std::string_view why;
  if (!ch.senders().empty()) {
    auto [it, made] = sender_group_.try_emplace(&ch, -1);
    if (made) {
      std::vector<const Fiber*> live;
      for (const Fiber* s : ch.senders())
        if (s->state != FiberState::finished) live.push_back(s);
      it->second = make_group(std::move(live), true);
    }
    g = it->second;
    why = "sends on this channel";
  } else {
    if (all_hosts_group_ < 0) {
      std::vector<const Fiber*> all;
      for (const auto& hosts : hosts_by_rank_) all.insert(all.end(), hosts.begin(), hosts.end());
      std::sort(all.begin(), all.end(), [](const Fiber* a, const Fiber* b) { return a->id < b->id; });
      all_hosts_group_ = make_group(std::move(all), true);
    }
    g = all_hosts_group_;
    why = "may send the message";
  }
  const std::vector<const Fiber*>& members = group(g).members;
  if (members.size() > 1 || (members.size() == 1 && members.front() != &f))
    n.links.push_back({nullptr, g, why});
  else
    n.links.push_back({nullptr, -1, "no host thread is left to send it"});
}

std::string short_op(const CommKernel& k) {
  const CommOp& op = k.parts.front();
  return fmt::format("{} on {}", core::to_string(op.spec.desc.kind), op.spec.comm->name);
}

void fill_op_site(Node& n, const CommKernel& k) {
  const CommOp& op = k.parts.front();
  n.site.comm = op.spec.comm->name;
  n.site.cseq = op.spec.cseq;
  n.site.origin = std::string(op.spec.origin);
}

void Explainer::explain_stream(const WaitInfo& w, Node& n) {
  const CommSystem& comms = rt_.comms();
  if (w.kernel != nullptr) {
    n.short_ = short_op(*w.kernel);
    fill_op_site(n, *w.kernel);
  }
  switch (w.kind) {
    case WaitKind::peer: explain_peer(*w.kernel, n); return;
    case WaitKind::comm_order: {
      const CommKernel& k = *w.kernel;
      n.state = fmt::format("holds {}, which must wait for an earlier communication kernel (R2/R7)",
                            comms.describe_kernel(k));
      if (const CommKernel* b = comms.order_blocker(k))
        n.links.push_back(
            {b->primary()->fiber(), -1, word(fmt::format("{} must finish first", comms.describe_kernel(*b)))});
      return;
    }
    case WaitKind::group_join: {
      const CommKernel& k = *w.kernel;
      n.state = fmt::format("reached {} and waits for the group's other streams", comms.describe_kernel(k));
      for (const SimStream* s : k.streams)
        if (s != k.primary() && (s->head() == nullptr || s->head()->comm != &k))
          n.links.push_back({s->fiber(), -1, "has not reached the group kernel"});
      return;
    }
    case WaitKind::kernel_done: {
      const CommKernel& k = *w.kernel;
      n.state = fmt::format("joined {} and waits for it to finish", comms.describe_kernel(k));
      n.links.push_back({k.primary()->fiber(), -1, "runs the group kernel"});
      return;
    }
    case WaitKind::flag_wait: explain_flag(w, n); return;
    case WaitKind::event_wait:
      n.state = fmt::format("waits (wait_event) for {}", event_words(w));
      n.short_ = "event wait";
      n.site.origin = std::string(w.event->waited_at);
      n.links.push_back(
          {w.stream->fiber(), -1, word(fmt::format("has not reached the record of event '{}'", w.event->event))});
      return;
    default: n.state = fmt::format("waiting ({})", w.what); n.short_ = std::string(w.what);
  }
}

// Why a send of `k` still waits for its recv when the scenario lets small sends complete
// eagerly: it is too big for the connection buffer, so the size decides whether the run hangs (R4).
std::string eager_boundary(const CommKernel& k, int64_t eager_bytes) {
  std::string s;
  if (eager_bytes <= 0) return s;
  for (const CommOp& op : k.parts) {
    const size_t bytes = op.spec.buf.bytes();
    if (op.satisfied || op.spec.desc.kind != core::OpKind::send || bytes <= static_cast<size_t>(eager_bytes)) continue;
    s += fmt::format(
        "; the message to rank{} ({} bytes) exceeded eager_bytes ({}): a send that fits completes before "
        "its recv is posted",
        op.spec.desc.peer, bytes, eager_bytes);
  }
  return s;
}

void Explainer::explain_peer(const CommKernel& k, Node& n) {
  const CommSystem& comms = rt_.comms();
  n.state = fmt::format("runs {} and spins waiting for its partner (R4){}", comms.describe_kernel(k),
                        eager_boundary(k, rt_.world().config().eager_bytes));
  for (const CommOp& op : k.parts) {
    if (op.satisfied) continue;
    if (core::is_p2p(op.spec.desc.kind)) {
      add_blocker(n.links, comms.p2p_blocker(k, op));
      continue;
    }
    const CollectiveLinks& c = collective(*k.comm, op.spec.cseq);
    if (c.hold.slot == nullptr) continue;
    if (!c.hold.members.empty())
      n.links.insert(n.links.end(), c.links.begin(), c.links.end());
    else
      add_blocker(n.links, comms.size_mismatch(c.hold, k.crank));
  }
}

void Explainer::explain_flag(const WaitInfo& w, Node& n) {
  n.state = fmt::format("runs a persistent kernel that spins until flag '{}' is set", w.flag->name);
  n.short_ = fmt::format("wait_flag {}", w.flag->name);
  const SimDevice& dev = w.stream->device();
  bool queued = false;
  for (const auto& st : dev.streams()) {
    if (st->queues_set_of(w.flag)) {
      n.links.push_back(
          {st->fiber(), -1, word(fmt::format("its set_flag('{}') is queued behind other work", w.flag->name))});
      queued = true;
    }
  }
  if (!queued)
    to_rank_hosts(n.links, dev.rank(),
                  word(fmt::format("rank{} has not issued set_flag('{}')", dev.rank(), w.flag->name)));
}

// Depth-first search for a cycle in the wait-for graph, iterative and deterministic. Linear in
// nodes, links and group members: a group's members are tried in order, each once over the
// whole search, and the members of a group on the search path are known without a scan.
class CycleSearch {
 public:
  explicit CycleSearch(Explainer& ex) : ex_(ex), color_(ex.fiber_count(), 0), pos_(ex.fiber_count(), 0) {}

  bool from(const Fiber* start, Chain& out) {
    if (color_[start->id] != 0) return false;
    if (enter(start, out)) return true;
    while (!path_.empty()) {
      const Node& n = *ex_.node(path_.back());
      size_t i = next_link_.back();
      const Fiber* next = nullptr;
      while (i < n.links.size() && (next = white_target(n.links[i])) == nullptr) ++i;
      next_link_.back() = i;
      if (next == nullptr) {
        leave();
        continue;
      }
      if (enter(next, out)) return true;
    }
    return false;
  }

 private:
  enum : uint8_t { kWhite, kOnPath, kDone };

  // Pushes `f`; true when one of its links leads back onto the path, with that cycle in `out`.
  bool enter(const Fiber* f, Chain& out) {
    const size_t at = path_.size();
    color_[f->id] = kOnPath;
    pos_[f->id] = at;
    path_.push_back(f);
    next_link_.push_back(0);
    for (int g : ex_.groups_of(f)) ex_.group(g).on_path.push_back(at);
    // Close the widest cycle: of the links that lead back onto the path (e.g. "any host thread
    // of rank 0 may post it"), take the one that reaches earliest on it.
    const Node& n = *ex_.node(f);
    size_t best = SIZE_MAX;
    size_t best_link = 0;
    for (size_t i = 0; i < n.links.size(); ++i) {
      const size_t p = path_position(n.links[i], f);
      if (p < best) {
        best = p;
        best_link = i;
      }
    }
    if (best == SIZE_MAX) return false;
    out.cycle = true;
    out.fibers.assign(path_.begin() + static_cast<std::ptrdiff_t>(best), path_.end());
    for (size_t k = best; k + 1 < path_.size(); ++k) {
      const Link& l = ex_.node(path_[k])->links[next_link_[k]];
      out.why.push_back(l.label);
      out.owed.push_back(l.culprit);
    }
    out.why.push_back(n.links[best_link].label);
    out.owed.push_back(n.links[best_link].culprit);
    return true;
  }

  void leave() {
    const Fiber* f = path_.back();
    for (int g : ex_.groups_of(f)) {
      PPSPEC_ASSERT(ex_.group(g).on_path.back() == path_.size() - 1);
      ex_.group(g).on_path.pop_back();
    }
    color_[f->id] = kDone;
    path_.pop_back();
    next_link_.pop_back();
  }

  // The earliest path position a link of `waiter` reaches; SIZE_MAX if it reaches none.
  size_t path_position(const Link& l, const Fiber* waiter) const {
    if (l.to != nullptr) return color_[l.to->id] == kOnPath ? pos_[l.to->id] : SIZE_MAX;
    if (l.group < 0) return SIZE_MAX;
    const Group& g = ex_.group(l.group);
    if (g.on_path.empty()) return SIZE_MAX;
    const size_t p = g.on_path.front();
    // The waiter is the top of the path: at the bottom of on_path it is the only member there.
    return g.skip_waiter && path_[p] == waiter ? SIZE_MAX : p;
  }

  // A stuck fiber the link reaches that the search has not visited yet, if any.
  const Fiber* white_target(const Link& l) {
    if (l.to != nullptr) return ex_.node(l.to) != nullptr && color_[l.to->id] == kWhite ? l.to : nullptr;
    if (l.group < 0) return nullptr;
    Group& g = ex_.group(l.group);
    while (g.cursor < g.members.size() && color_[g.members[g.cursor]->id] != kWhite) ++g.cursor;
    return g.cursor < g.members.size() ? g.members[g.cursor] : nullptr;
  }

  Explainer& ex_;
  std::vector<uint8_t> color_;  // by fiber id
  std::vector<size_t> pos_;     // by fiber id: position on the path while on it
  std::vector<const Fiber*> path_;
  std::vector<size_t> next_link_;  // per path entry: the link being followed
};

// The first stuck fiber a link of `waiter` reaches, if any.
const Fiber* first_target(const Explainer& ex, const Link& l, const Fiber* waiter) {
  if (l.to != nullptr) return ex.node(l.to) != nullptr ? l.to : nullptr;
  if (l.group < 0) return nullptr;
  const Group& g = ex.group(l.group);
  for (const Fiber* m : g.members)
    if (!g.skip_waiter || m != waiter) return m;
  return nullptr;
}

// Without a cycle: the first waits from `start` to where nobody can act.
Chain follow_chain(const Explainer& ex, const Fiber* start) {
  Chain c;
  std::vector<uint8_t> seen(ex.fiber_count(), 0);
  for (const Fiber* f = start; f != nullptr && !seen[f->id];) {
    seen[f->id] = 1;
    c.fibers.push_back(f);
    const Node& n = *ex.node(f);
    const Fiber* next = nullptr;
    for (const Link& l : n.links) {
      if ((next = first_target(ex, l, f)) != nullptr) {
        c.why.push_back(l.label);
        break;
      }
    }
    if (next == nullptr) {
      c.end = n.links.empty() ? "nothing can make progress" : n.links.front().label;
      c.end_culprit = n.links.empty() ? nullptr : n.links.front().culprit;
    }
    f = next;
  }
  return c;
}

std::string dot_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// The fibers searched first: those that hold things up actively (the context lock, a module
// load or device sync, first contact) before those that merely wait for a stream, so that the
// cycle shows the cause; by creation order within each kind.
void order_for_search(std::vector<const Fiber*>& stuck) {
  auto rank_of_wait = [](const Fiber* f) {
    if (f->kind != FiberKind::host) return 9;
    switch (f->wait.kind) {
      case WaitKind::context_lock: return 0;
      case WaitKind::device_drain: return 1;
      case WaitKind::connect:
      case WaitKind::comm_init: return 2;
      case WaitKind::channel: return 3;
      default: return 4;
    }
  };
  std::stable_sort(stuck.begin(), stuck.end(), [&](const Fiber* a, const Fiber* b) {
    if (rank_of_wait(a) != rank_of_wait(b)) return rank_of_wait(a) < rank_of_wait(b);
    return a->id < b->id;
  });
}

// A cycle has no first fiber: it is told from its first rank's host thread or stream, not from the
// engine core (rank -1), so that the report's first site names where the ranks went wrong (with
// data parallelism the engine core's wait for one replica's output closes many cycles).
void start_at_a_rank(Chain& c) {
  if (!c.cycle || c.fibers.empty() || c.fibers.front()->rank >= 0) return;
  const auto first = std::find_if(c.fibers.begin(), c.fibers.end(), [](const Fiber* f) { return f->rank >= 0; });
  if (first == c.fibers.end()) return;
  const auto by = first - c.fibers.begin();
  PPSPEC_ASSERT(c.why.size() == c.fibers.size(), "a cycle of {} fibers with {} links", c.fibers.size(), c.why.size());
  std::rotate(c.fibers.begin(), first, c.fibers.end());
  std::rotate(c.why.begin(), c.why.begin() + by, c.why.end());
  std::rotate(c.owed.begin(), c.owed.begin() + by, c.owed.end());
}

// In a cycle, the rank that skipped a post: one awaits an operation of rank R's that R never
// posted, and R's host thread is back waiting for work on a host channel (it finished its step
// without posting it), so the cycle closes through whoever feeds R work (the engine core waiting
// for the stuck rank's output). As check and watch blame the rank that never posted what a dump
// shows awaited. The index of the fiber that waits; none when no wait of the cycle is of that kind.
std::optional<size_t> skipped_post(const Chain& c) {
  if (!c.cycle) return std::nullopt;
  for (size_t i = 0; i < c.fibers.size() && i < c.owed.size(); ++i) {
    const Fiber* next = c.fibers[(i + 1) % c.fibers.size()];
    if (c.owed[i] != nullptr && next->kind == FiberKind::host && next->wait.kind == WaitKind::channel &&
        next->rank == c.owed[i]->rank)
      return i;
  }
  return std::nullopt;
}

// The summary line, the chain in words and the chain's sites, at most kFindingListMax fibers of it.
void describe_chain(const Explainer& ex, const Chain& c, size_t stuck_count, core::Finding& f) {
  const size_t shown = std::min(c.fibers.size(), kFindingListMax);
  const std::string_view what = c.cycle ? "cycle" : "chain";
  std::string arrows;
  for (size_t i = 0; i < shown; ++i) {
    const Fiber* fib = c.fibers[i];
    if (i) arrows += " → ";
    arrows += fib->kind == FiberKind::host ? fmt::format("{} → {}", fib->name, ex.node(fib)->short_)
                                           : fmt::format("{} ({})", fib->name, ex.node(fib)->short_);
  }
  if (shown < c.fibers.size()) arrows += fmt::format(" → … {} more in the {}", c.fibers.size() - shown, what);
  arrows += c.cycle ? fmt::format(" → {}", c.fibers.front()->name) : fmt::format(" → ✗ {}", c.end);
  f.summary = fmt::format("nothing can run: {}", arrows);
  f.details.push_back(c.cycle
                          ? fmt::format("{} fibers are stuck; they wait for each other in a cycle:", stuck_count)
                          : fmt::format("{} fibers are stuck; the wait chain ends where nobody can act:", stuck_count));
  for (size_t i = 0; i < shown; ++i) {
    const Node& n = *ex.node(c.fibers[i]);
    const std::string at = n.site.origin.empty() ? "" : fmt::format(" [{}]", n.site.origin);
    f.details.push_back(fmt::format("  {:<14} {}{}", n.fiber->name, n.state, at));
    const Fiber* next = i + 1 < c.fibers.size() ? c.fibers[i + 1] : (c.cycle ? c.fibers.front() : nullptr);
    if (next != nullptr) f.details.push_back(fmt::format("  {:<14}   ↳ waits for {}: {}", "", next->name, c.why[i]));
    f.sites.push_back(n.site);
  }
  if (shown < c.fibers.size()) {
    f.details.push_back(fmt::format("  … and {} more fibers in the {}", c.fibers.size() - shown, what));
    if (c.cycle) {
      // The link that closes the cycle, so that the reader sees it is one.
      const Node& last = *ex.node(c.fibers.back());
      const std::string at = last.site.origin.empty() ? "" : fmt::format(" [{}]", last.site.origin);
      f.details.push_back(fmt::format("  {:<14} {}{}", last.fiber->name, last.state, at));
      f.details.push_back(fmt::format("  {:<14}   ↳ waits for {}: {}", "", c.fibers.front()->name, c.why.back()));
    }
  }
  if (!c.cycle) f.details.push_back(fmt::format("  {:<14}   ↳ {}", "", c.end));
  if (c.cycle) f.culprit.what = core::Blame::cycle;
  if (const std::optional<size_t> waiter = skipped_post(c)) {
    const core::Culprit* skipped = c.owed[*waiter];
    f.culprit = *skipped;
    f.summary = fmt::format("rank{} never posted {} #{} on '{}', a skipped call; {}", skipped->rank,
                            skipped->p2p ? "p2p operation" : "collective", skipped->position, skipped->comm, f.summary);
    f.details.push_back(fmt::format(
        "  rank{} went back to waiting for work without posting {} #{} on '{}' that rank{} waits for: a skipped "
        "call, and the cycle closes through whoever feeds rank{} work",
        skipped->rank, skipped->p2p ? "p2p operation" : "collective", skipped->position, skipped->comm,
        c.fibers[*waiter]->rank, skipped->rank));
  }
  if (!c.cycle && c.end_culprit != nullptr) f.culprit = *c.end_culprit;
}

// The ranks awaited that have no host thread left, and the stuck fibers outside the chain.
void describe_rest(const Explainer& ex, const Chain& c, const std::vector<const Fiber*>& stuck, core::Finding& f) {
  const std::vector<core::RankId>& absent = ex.absent_ranks();
  for (size_t i = 0; i < absent.size() && i < kFindingListMax; ++i) {
    bool have = false;
    for (const auto& s : f.sites) have = have || (s.rank == absent[i] && s.actor.empty());
    if (!have) f.sites.push_back(core::Site{absent[i], "", "", -1, "never posts the awaited operation", ""});
  }
  if (absent.size() > kFindingListMax)
    f.details.push_back(
        fmt::format("  … and {} more ranks with no host thread left are awaited", absent.size() - kFindingListMax));
  std::vector<uint8_t> in_chain(ex.fiber_count(), 0);
  for (const Fiber* fib : c.fibers) in_chain[fib->id] = 1;
  const size_t others = stuck.size() - c.fibers.size();
  if (others == 0) return;
  f.details.push_back("  also stuck:");
  size_t listed = 0;
  for (const Fiber* s : stuck) {
    if (in_chain[s->id] || listed == kFindingListMax) continue;
    f.details.push_back(fmt::format("  {:<14} {}", s->name, ex.node(s)->state));
    ++listed;
  }
  if (others > listed) f.details.push_back(fmt::format("  … and {} more", others - listed));
}

// Graphviz: the shown part of the chain and up to kFindingListMax other stuck fibers, with the
// waits between them (at most kDotWaitsMax); the chain's waits in red.
class DotWriter {
 public:
  static constexpr size_t kDotWaitsMax = 4 * kFindingListMax;

  DotWriter(const Explainer& ex, const Chain& c) : ex_(ex), chain_(c), chain_at_(ex.fiber_count(), SIZE_MAX) {}

  std::string write(const std::vector<const Fiber*>& stuck) {
    for (size_t i = 0; i < chain_.fibers.size() && i < kFindingListMax; ++i) chain_at_[chain_.fibers[i]->id] = i;
    size_t others = 0;
    for (const Fiber* s : stuck) {
      if (chain_at_[s->id] != SIZE_MAX) {
        shown_.push_back(s);
      } else if (others < kFindingListMax) {
        shown_.push_back(s);
        ++others;
      }
    }
    std::vector<uint8_t> is_shown(ex_.fiber_count(), 0);
    for (const Fiber* s : shown_) is_shown[s->id] = 1;
    dot_ = "digraph deadlock {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n";
    for (const Fiber* s : shown_)
      dot_ += fmt::format("  f{} [label=\"{}\\n{}\"{}];\n", s->id, dot_escape(s->name), dot_escape(ex_.node(s)->short_),
                          chain_at_[s->id] != SIZE_MAX ? ", color=red, penwidth=2" : "");
    chain_waits();
    // The chain's own fibers first, so that where the chain ends is drawn within the budget.
    for (const Fiber* s : shown_)
      if (chain_at_[s->id] != SIZE_MAX) other_waits(s, is_shown);
    for (const Fiber* s : shown_)
      if (chain_at_[s->id] == SIZE_MAX) other_waits(s, is_shown);
    if (stuck.size() > shown_.size())
      dot_ += fmt::format("  more_fibers [shape=plaintext, label=\"… and {} more stuck fibers\"];\n",
                          stuck.size() - shown_.size());
    if (waits_left_out_ > 0)
      dot_ += fmt::format("  more_waits [shape=plaintext, label=\"… and {} more waits\"];\n", waits_left_out_);
    dot_ += "}\n";
    return std::move(dot_);
  }

 private:
  bool is_chain_wait(const Fiber* from, const Fiber* to, std::string_view label) const {
    const size_t i = chain_at_[from->id];
    if (i == SIZE_MAX || label != chain_.why[i]) return false;
    if (i + 1 < chain_.fibers.size()) return chain_.fibers[i + 1] == to;
    return chain_.cycle && chain_.fibers.front() == to;
  }

  void chain_waits() {
    const size_t shown = std::min(chain_.fibers.size(), kFindingListMax);
    for (size_t i = 0; i < shown; ++i) {
      const bool last = i + 1 == chain_.fibers.size();
      if (last && !chain_.cycle) break;
      const Fiber* to = last ? chain_.fibers.front() : chain_.fibers[i + 1];
      if (chain_at_[to->id] == SIZE_MAX) continue;  // beyond the shown part
      dot_ += fmt::format("  f{} -> f{} [label=\"{}\", color=red, penwidth=2];\n", chain_.fibers[i]->id, to->id,
                          dot_escape(chain_.why[i]));
    }
  }

  bool budget_left() {
    if (waits_drawn_ == kDotWaitsMax) {
      ++waits_left_out_;
      return false;
    }
    ++waits_drawn_;
    return true;
  }

  void edge(const Fiber* from, const Fiber* to, std::string_view label) {
    if (is_chain_wait(from, to, label)) return;  // drawn in red already
    if (budget_left()) dot_ += fmt::format("  f{} -> f{} [label=\"{}\"];\n", from->id, to->id, dot_escape(label));
  }

  void terminal(const Fiber* from, std::string_view label) {
    if (!budget_left()) return;
    auto [it, made] = terminals_.try_emplace(label, terminals_.size());
    if (made) dot_ += fmt::format("  t{} [shape=plaintext, label=\"{}\"];\n", it->second, dot_escape(label));
    dot_ += fmt::format("  f{} -> t{};\n", from->id, it->second);
  }

  void other_waits(const Fiber* s, const std::vector<uint8_t>& is_shown) {
    for (const Link& l : ex_.node(s)->links) {
      if (l.to != nullptr) {
        if (is_shown[l.to->id]) edge(s, l.to, l.label);
      } else if (l.group >= 0) {
        const Group& g = ex_.group(l.group);
        for (const Fiber* m : shown_) {
          if (g.skip_waiter && m == s) continue;
          const std::vector<int>& of = ex_.groups_of(m);
          if (std::find(of.begin(), of.end(), l.group) != of.end()) edge(s, m, l.label);
        }
      } else {
        terminal(s, l.label);
      }
    }
  }

  const Explainer& ex_;
  const Chain& chain_;
  std::vector<size_t> chain_at_;  // by fiber id: index in the shown part of the chain
  std::vector<const Fiber*> shown_;
  std::map<std::string_view, size_t> terminals_;  // one node per distinct "nobody can act"
  std::string dot_;
  size_t waits_drawn_ = 0;
  size_t waits_left_out_ = 0;
};

}  // namespace

std::optional<core::Finding> explain_deadlock(const SimRuntime& rt, const std::function<void(WaitGraph&)>& on_stuck) {
  std::vector<const Fiber*> stuck;
  for (const auto& f : rt.world().fibers())
    if (Explainer::stuck(*f)) stuck.push_back(f.get());
  if (stuck.empty()) return std::nullopt;
  Explainer ex(rt);
  ex.explain(stuck);
  if (on_stuck) {
    StuckGraph graph(ex, rt);
    on_stuck(graph);
  }
  order_for_search(stuck);

  Chain chain;
  CycleSearch search(ex);
  for (const Fiber* f : stuck)
    if (search.from(f, chain)) break;
  if (!chain.cycle) chain = follow_chain(ex, stuck.front());
  start_at_a_rank(chain);

  core::Finding f;
  f.verdict = core::Verdict::deadlock;
  f.kind = chain.cycle ? core::FindingKind::cycle : core::FindingKind::stuck;
  describe_chain(ex, chain, stuck.size(), f);
  describe_rest(ex, chain, stuck, f);
  f.dot = DotWriter(ex, chain).write(stuck);
  return f;
}

}  // namespace ppspec::sim
