#include "sim/deadlock_detector.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <string>
#include <vector>

#include "sim/comm_system.h"
#include "sim/device.h"
#include "sim/sim_runtime.h"
#include "sim/stream.h"

namespace ppspec::sim {
namespace {

struct Edge {
  const Fiber* to = nullptr;  // null: the chain ends here (nobody left to act)
  std::string label;          // why the source waits for `to`
};

struct Node {
  const Fiber* fiber = nullptr;
  std::string state;   // what it is doing, in words
  std::string short_;  // a few words for the one-line chain
  core::Site site;
  std::vector<Edge> edges;
};

class Explainer {
 public:
  explicit Explainer(const SimRuntime& rt) : rt_(rt) {}

  bool stuck(const Fiber& f) const {
    if (f.state == FiberState::finished) return false;
    if (f.kind == FiberKind::stream) return f.stream != nullptr && !f.stream->idle();
    return true;
  }

  std::vector<const Fiber*> hosts_of(core::RankId r) const {
    std::vector<const Fiber*> out;
    for (const auto& f : rt_.world().fibers())
      if (f->kind == FiberKind::host && f->rank == r && f->state != FiberState::finished) out.push_back(f.get());
    return out;
  }

  void to_rank_hosts(Node& n, core::RankId r, const std::string& why) const {
    const auto hosts = hosts_of(r);
    if (hosts.empty()) {
      n.edges.push_back({nullptr, fmt::format("{}, and rank{} has no running host thread left to do it", why, r)});
      terminal_ranks_.push_back(r);
      return;
    }
    for (const Fiber* h : hosts) n.edges.push_back({h, why});
  }

  Node explain(const Fiber& f) const {
    Node n;
    n.fiber = &f;
    n.site.rank = f.rank;
    n.site.actor = f.name;
    const WaitInfo& w = f.wait;
    if (f.kind == FiberKind::host) {
      n.site.origin = f.host != nullptr ? std::string(f.host->call_site) : "";
      explain_host(f, w, n);
    } else {
      explain_stream(f, w, n);
    }
    n.site.what = n.state;
    return n;
  }

  void explain_host(const Fiber& f, const WaitInfo& w, Node& n) const {
    switch (w.kind) {
      case WaitKind::stream_sync:
        n.state = fmt::format("blocked in stream_sync({})", w.stream->full_name());
        n.short_ = "stream_sync";
        n.edges.push_back({w.stream->fiber(), "the stream has unfinished work"});
        return;
      case WaitKind::event_sync:
        n.state = fmt::format("blocked in event_sync('{}', recorded on {})", w.event ? w.event->name : "?",
                              w.stream->full_name());
        n.short_ = "event_sync";
        n.edges.push_back({w.stream->fiber(), "the event's stream has not reached it"});
        return;
      case WaitKind::device_drain: {
        const SimDevice& dev = *w.device;
        if (w.what == "module load") {
          n.state = fmt::format("blocked in the module load of {} ({} loading): it holds the context lock and waits "
                                "for every earlier kernel on device {} to finish (R8)",
                                dev.loading(), core::to_string(dev.module_loading()), dev.rank());
          n.short_ = "module load";
        } else {
          n.state = fmt::format("blocked in {}: waits for every earlier kernel on device {} to finish (R8)", w.what,
                                dev.rank());
          n.short_ = std::string(w.what);
        }
        for (const auto& s : dev.streams())
          if (!s->idle()) n.edges.push_back({s->fiber(), "the device must drain"});
        return;
      }
      case WaitKind::context_lock:
        n.state = fmt::format("blocked on device {}'s context lock, held by {} (loading {})", w.device->rank(),
                              w.holder->name, w.device->loading());
        n.short_ = "context lock";
        n.edges.push_back({w.holder, "holds the context lock"});
        return;
      case WaitKind::connect: {
        n.state = fmt::format("blocked in first-contact setup of the {} (NCCL_RUNTIME_CONNECT, R1)", w.connection->what);
        n.short_ = "connect";
        for (size_t i = 0; i < w.connection->parties.size(); ++i)
          if (!w.connection->arrived[i])
            to_rank_hosts(n, w.connection->parties[i],
                          fmt::format("rank{} has not reached its side of the connection", w.connection->parties[i]));
        return;
      }
      case WaitKind::comm_init: {
        n.state = "blocked in comm init (collective over all members, R1)";
        n.short_ = "comm init";
        for (const auto& c : rt_.comms().comms()) {
          if (&c->init != w.init) continue;
          for (size_t i = 0; i < c->members.size(); ++i)
            if (!c->init.arrived[i])
              to_rank_hosts(n, c->members[i], fmt::format("rank{} has not called comm_init('{}')", c->members[i], c->name));
        }
        return;
      }
      case WaitKind::channel:
        n.state = fmt::format("blocked receiving from host channel '{}'", w.channel->name());
        n.short_ = "channel recv";
        // Who sent on this channel before is who sends next (the engine core to a worker, the
        // last stage to the engine core); a channel nobody has used yet may hear from anyone.
        if (!w.channel->senders().empty()) {
          for (const Fiber* g : w.channel->senders())
            if (g != &f && g->state != FiberState::finished) n.edges.push_back({g, "sends on this channel"});
        } else {
          for (const auto& g : rt_.world().fibers())
            if (g->kind == FiberKind::host && g.get() != &f && g->state != FiberState::finished)
              n.edges.push_back({g.get(), "may send the message"});
        }
        if (n.edges.empty()) n.edges.push_back({nullptr, "no host thread is left to send it"});
        return;
      default:
        n.state = fmt::format("waiting ({})", w.what);
        n.short_ = std::string(w.what);
    }
  }

  void explain_stream(const Fiber& f, const WaitInfo& w, Node& n) const {
    const CommSystem& comms = rt_.comms();
    switch (w.kind) {
      case WaitKind::peer: {
        const CommKernel& k = *w.kernel;
        n.state = fmt::format("runs {} and spins waiting for its partner (R4)", comms.describe_kernel(k));
        n.short_ = short_op(k);
        fill_op_site(n, k);
        for (const Blocker& b : comms.blockers(k)) {
          if (b.kind == Blocker::Kind::stream)
            n.edges.push_back({b.stream->fiber(), b.what});
          else if (b.kind == Blocker::Kind::rank_host)
            to_rank_hosts(n, b.rank, b.what);
          else
            n.edges.push_back({nullptr, b.what});
        }
        return;
      }
      case WaitKind::comm_order: {
        const CommKernel& k = *w.kernel;
        n.state = fmt::format("holds {}, which must wait for an earlier communication kernel (R2/R7)",
                              comms.describe_kernel(k));
        n.short_ = short_op(k);
        fill_op_site(n, k);
        if (const CommKernel* b = comms.order_blocker(k))
          n.edges.push_back({b->primary()->fiber(), fmt::format("{} must finish first", comms.describe_kernel(*b))});
        return;
      }
      case WaitKind::group_join: {
        const CommKernel& k = *w.kernel;
        n.state = fmt::format("reached {} and waits for the group's other streams", comms.describe_kernel(k));
        n.short_ = short_op(k);
        fill_op_site(n, k);
        for (const SimStream* s : k.streams)
          if (s != k.primary() && (s->head() == nullptr || s->head()->comm != &k))
            n.edges.push_back({s->fiber(), "has not reached the group kernel"});
        return;
      }
      case WaitKind::kernel_done: {
        const CommKernel& k = *w.kernel;
        n.state = fmt::format("joined {} and waits for it to finish", comms.describe_kernel(k));
        n.short_ = short_op(k);
        fill_op_site(n, k);
        n.edges.push_back({k.primary()->fiber(), "runs the group kernel"});
        return;
      }
      case WaitKind::flag_wait: {
        n.state = fmt::format("runs a persistent kernel that spins until flag '{}' is set", w.flag->name);
        n.short_ = fmt::format("wait_flag {}", w.flag->name);
        const SimDevice& dev = w.stream->device();
        bool queued = false;
        for (const auto& st : dev.streams()) {
          if (st->queues_set_of(w.flag)) {
            n.edges.push_back({st->fiber(), fmt::format("its set_flag('{}') is queued behind other work", w.flag->name)});
            queued = true;
          }
        }
        if (!queued)
          to_rank_hosts(n, dev.rank(), fmt::format("rank{} has not issued set_flag('{}')", dev.rank(), w.flag->name));
        return;
      }
      case WaitKind::event_wait:
        n.state = fmt::format("waits for an event recorded on {}", w.stream->full_name());
        n.short_ = "event wait";
        n.edges.push_back({w.stream->fiber(), "has not reached the event"});
        return;
      default:
        n.state = fmt::format("waiting ({})", w.what);
        n.short_ = std::string(w.what);
        (void)f;
    }
  }

  static std::string short_op(const CommKernel& k) {
    const CommOp& op = k.parts.front();
    return fmt::format("{} on {}", core::to_string(op.spec.desc.kind), op.spec.comm->name);
  }

  static void fill_op_site(Node& n, const CommKernel& k) {
    const CommOp& op = k.parts.front();
    n.site.comm = op.spec.comm->name;
    n.site.cseq = op.spec.cseq;
    n.site.origin = std::string(op.spec.origin);
  }

  mutable std::vector<core::RankId> terminal_ranks_;

 private:
  const SimRuntime& rt_;
};

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::optional<core::Finding> explain_deadlock(const SimRuntime& rt) {
  Explainer ex(rt);
  std::vector<const Fiber*> stuck;
  for (const auto& f : rt.world().fibers())
    if (ex.stuck(*f)) stuck.push_back(f.get());
  if (stuck.empty()) return std::nullopt;

  std::map<const Fiber*, Node> nodes;
  for (const Fiber* f : stuck) nodes.emplace(f, ex.explain(*f));

  // Depth-first search for a cycle, deterministic. It starts from the fibers that hold things up
  // actively (blocked on the context lock, in a module load or device sync, at first contact)
  // before those that merely wait for a stream, so that the cycle shows the cause.
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
  std::map<const Fiber*, int> color;  // 0 white, 1 on path, 2 done
  std::vector<const Fiber*> path;
  std::vector<const Fiber*> cycle;
  auto dfs = [&](auto&& self, const Fiber* f) -> bool {
    color[f] = 1;
    path.push_back(f);
    // Close the widest cycle first: of several waits that lead back onto the path (e.g. "any host
    // thread of rank 0 may post it"), take the one earliest on the path.
    for (const Fiber* on_path : path) {
      for (const Edge& e : nodes[f].edges) {
        if (e.to == on_path) {
          cycle.assign(std::find(path.begin(), path.end(), on_path), path.end());
          return true;
        }
      }
    }
    for (const Edge& e : nodes[f].edges) {
      if (e.to == nullptr || !nodes.count(e.to)) continue;
      if (color[e.to] == 1) {
        auto it = std::find(path.begin(), path.end(), e.to);
        cycle.assign(it, path.end());
        return true;
      }
      if (color[e.to] == 0 && self(self, e.to)) return true;
    }
    path.pop_back();
    color[f] = 2;
    return false;
  };
  for (const Fiber* f : stuck)
    if (color[f] == 0 && dfs(dfs, f)) break;

  // Without a cycle, follow the first waits from the first stuck fiber to where the chain ends.
  std::vector<const Fiber*> chain = cycle;
  std::string chain_end;
  if (chain.empty()) {
    const Fiber* f = stuck.front();
    std::vector<const Fiber*> seen;
    while (f != nullptr && std::find(seen.begin(), seen.end(), f) == seen.end()) {
      seen.push_back(f);
      const Node& n = nodes[f];
      const Fiber* next = nullptr;
      for (const Edge& e : n.edges) {
        if (e.to != nullptr && nodes.count(e.to)) {
          next = e.to;
          break;
        }
      }
      if (next == nullptr) {
        chain_end = n.edges.empty() ? "nothing can make progress" : n.edges.front().label;
      }
      f = next;
    }
    chain = seen;
  }

  auto edge_label = [&](const Fiber* from, const Fiber* to) -> std::string {
    for (const Edge& e : nodes[from].edges)
      if (e.to == to) return e.label;
    return "";
  };

  core::Finding f;
  f.verdict = core::Verdict::deadlock;
  f.kind = cycle.empty() ? "stuck" : "cycle";
  std::string arrows;
  for (size_t i = 0; i < chain.size(); ++i) {
    const Node& n = nodes[chain[i]];
    if (i) arrows += " → ";
    if (chain[i]->kind == FiberKind::host)
      arrows += fmt::format("{} → {}", chain[i]->name, n.short_);
    else
      arrows += fmt::format("{} ({})", chain[i]->name, n.short_);
  }
  if (!cycle.empty())
    arrows += fmt::format(" → {}", cycle.front()->name);
  else
    arrows += fmt::format(" → ✗ {}", chain_end);
  f.summary = fmt::format("nothing can run: {}", arrows);
  f.details.push_back(cycle.empty() ? fmt::format("{} fibers are stuck; the wait chain ends where nobody can act:", stuck.size())
                                    : fmt::format("{} fibers are stuck; they wait for each other in a cycle:", stuck.size()));
  for (size_t i = 0; i < chain.size(); ++i) {
    const Node& n = nodes[chain[i]];
    const std::string at = n.site.origin.empty() ? "" : fmt::format(" [{}]", n.site.origin);
    f.details.push_back(fmt::format("  {:<14} {}{}", n.fiber->name, n.state, at));
    const Fiber* next = i + 1 < chain.size() ? chain[i + 1] : (cycle.empty() ? nullptr : cycle.front());
    if (next != nullptr)
      f.details.push_back(fmt::format("  {:<14}   ↳ waits for {}: {}", "", next->name, edge_label(chain[i], next)));
    f.sites.push_back(n.site);
  }
  if (cycle.empty()) f.details.push_back(fmt::format("  {:<14}   ↳ {}", "", chain_end));
  for (core::RankId r : ex.terminal_ranks_) {
    bool have = false;
    for (const auto& s : f.sites) have = have || (s.rank == r && s.actor.empty());
    if (!have) f.sites.push_back(core::Site{r, "", "", -1, "never posts the awaited operation", ""});
  }
  std::vector<const Fiber*> others;
  for (const Fiber* s : stuck)
    if (std::find(chain.begin(), chain.end(), s) == chain.end()) others.push_back(s);
  if (!others.empty()) {
    f.details.push_back("  also stuck:");
    for (const Fiber* s : others) f.details.push_back(fmt::format("  {:<14} {}", s->name, nodes[s].state));
  }

  // Graphviz: every stuck fiber, every wait; the cycle in red.
  std::string dot = "digraph deadlock {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (const Fiber* s : stuck) {
    const Node& n = nodes[s];
    const bool in_chain = std::find(chain.begin(), chain.end(), s) != chain.end();
    dot += fmt::format("  f{} [label=\"{}\\n{}\"{}];\n", s->id, dot_escape(s->name), dot_escape(n.short_),
                       in_chain ? ", color=red, penwidth=2" : "");
  }
  int terminals = 0;
  for (const Fiber* s : stuck) {
    for (const Edge& e : nodes[s].edges) {
      if (e.to == nullptr) {
        dot += fmt::format("  t{} [shape=plaintext, label=\"{}\"];\n  f{} -> t{};\n", terminals, dot_escape(e.label),
                           s->id, terminals);
        ++terminals;
        continue;
      }
      if (!nodes.count(e.to)) continue;
      bool red = false;
      for (size_t i = 0; i < cycle.size(); ++i)
        red = red || (cycle[i] == s && cycle[(i + 1) % cycle.size()] == e.to);
      dot += fmt::format("  f{} -> f{} [label=\"{}\"{}];\n", s->id, e.to->id, dot_escape(e.label),
                         red ? ", color=red, penwidth=2" : "");
    }
  }
  dot += "}\n";
  f.dot = std::move(dot);
  return f;
}

}  // namespace ppspec::sim
