#include "program/runner.h"

#include <fmt/format.h>
#include <map>
#include <memory>
#include <stdexcept>

#include "sim/sim_runtime.h"

namespace ppspec::program {
namespace {

// Per-rank state shared by the rank's threads.
struct RankEnv {
  std::vector<core::Communicator*> comms;  // by declaration index; set by comm_init
  std::map<std::string, core::Graph, std::less<>> graphs;
};

// An operation with its names resolved once, before the run.
struct ResolvedOp {
  core::Buffer buf;
  core::Buffer buf2;  // all_gather, all_to_all: the receive buffer
  core::Stream stream;
  int comm = -1;  // declaration index
  int peer = -1;  // comm rank of the peer or root
};

// Everything the actors of one run share; owned by the runtime's actors through a shared_ptr.
struct Env {
  const Program* program = nullptr;
  core::Runtime* rt = nullptr;
  std::vector<RankEnv> ranks;
  std::vector<std::vector<std::vector<ResolvedOp>>> ops;  // [rank][thread][op]
};

int comm_rank(const CommDecl& c, core::RankId r) {
  for (size_t i = 0; i < c.ranks.size(); ++i)
    if (c.ranks[i] == r) return static_cast<int>(i);
  throw std::logic_error(fmt::format("rank{} is not in communicator '{}'", r, c.name));
}

void execute(Env& env, core::RankId r, const ResolvedOp& res, const ProgramOp& op, int64_t iteration, int64_t repeat) {
  core::Runtime& rt = *env.rt;
  core::Device& dev = rt.device(r);
  RankEnv& re = env.ranks[static_cast<size_t>(r)];
  rt.set_call_site(op.origin);
  const core::Stream stream = res.stream;
  const core::Label label{op.label, op.step >= 0 ? op.step : (repeat > 1 ? iteration : -1)};
  auto comm = [&]() -> core::Communicator& { return *re.comms[static_cast<size_t>(res.comm)]; };
  switch (op.type) {
    case OpType::send: comm().send(res.buf, res.peer, stream, label); return;
    case OpType::recv: comm().recv(res.buf, res.peer, stream, label); return;
    case OpType::broadcast: comm().broadcast(res.buf, res.peer, stream, label); return;
    case OpType::all_reduce: comm().all_reduce(res.buf, core::ReduceOp::sum, stream, label); return;
    case OpType::all_gather: comm().all_gather(res.buf, res.buf2, stream, label); return;
    case OpType::all_to_all: comm().all_to_all(res.buf, res.buf2, stream, label); return;
    case OpType::group_start: rt.group_start(); return;
    case OpType::group_end: rt.group_end(); return;
    case OpType::launch: {
      core::KernelLaunch k;
      k.kernel = core::KernelRef{op.kernel, op.spec};
      k.duration = op.duration;
      dev.launch(stream, k);
      return;
    }
    case OpType::preload: dev.preload(core::KernelRef{op.kernel, op.spec}); return;
    case OpType::record: dev.record(dev.event(op.event), stream); return;
    case OpType::wait_event: dev.stream_wait(stream, dev.event(op.event)); return;
    case OpType::event_sync: dev.event_sync(dev.event(op.event)); return;
    case OpType::stream_sync: dev.stream_sync(stream); return;
    case OpType::device_sync: dev.device_sync(); return;
    case OpType::malloc: (void)dev.alloc(core::Dtype::u8, core::Shape{op.count, 1}, "malloc"); return;
    case OpType::sleep: rt.sleep(op.duration); return;
    case OpType::capture_begin: dev.capture_begin(stream); return;
    case OpType::capture_end: re.graphs[op.graph] = dev.capture_end(stream); return;
    case OpType::graph_launch: dev.graph_launch(re.graphs.at(op.graph), stream); return;
    case OpType::wait_flag: dev.wait_flag(stream, op.flag); return;
    case OpType::set_flag: dev.set_flag(stream, op.flag); return;
  }
}

}  // namespace

void install(const Program& p, core::Runtime& rt) {
  auto env = std::make_shared<Env>();
  env->program = &p;
  env->rt = &rt;
  env->ranks.assign(static_cast<size_t>(p.num_ranks), RankEnv{std::vector<core::Communicator*>(p.comms.size()), {}});
  for (const CommDecl& c : p.comms) rt.declare_comm(c.name, c.ranks);
  env->ops.resize(static_cast<size_t>(p.num_ranks));
  for (core::RankId r = 0; r < p.num_ranks; ++r) {
    core::Device& dev = rt.device(r);
    for (const std::string& s : p.streams) (void)dev.stream(s);
    const auto& threads = p.ranks[static_cast<size_t>(r)];
    auto& rank_ops = env->ops[static_cast<size_t>(r)];
    rank_ops.resize(threads.size());
    for (size_t t = 0; t < threads.size(); ++t) {
      for (const ProgramOp& op : threads[t].ops) {
        ResolvedOp res;
        if (!op.stream.empty()) res.stream = dev.stream(op.stream);
        if (is_comm_op(op.type)) {
          for (size_t c = 0; c < p.comms.size(); ++c)
            if (p.comms[c].name == op.comm) res.comm = static_cast<int>(c);
          if (res.comm < 0) throw std::logic_error(fmt::format("unknown communicator '{}'", op.comm));
          const CommDecl& decl = p.comms[static_cast<size_t>(res.comm)];
          if (op.peer >= 0) res.peer = comm_rank(decl, op.peer);
          // all_to_all's `count` is per peer, as all_gather's is per rank: both buffers hold one chunk per member.
          const int64_t members = static_cast<int64_t>(decl.ranks.size());
          res.buf = dev.alloc(op.dtype, core::Shape{op.type == OpType::all_to_all ? op.count * members : op.count, 1},
                              op.label);
          res.buf.mark_all_written();
          if (op.type == OpType::all_gather || op.type == OpType::all_to_all)
            res.buf2 = dev.alloc(op.dtype, core::Shape{op.count * members, 1}, op.label);
        }
        rank_ops[t].push_back(res);
      }
    }
  }
  for (core::RankId r = 0; r < p.num_ranks; ++r) {
    const auto& threads = p.ranks[static_cast<size_t>(r)];
    const std::string init_channel = fmt::format("rank{}.init", r);
    for (size_t t = 0; t < threads.size(); ++t) {
      rt.spawn(core::ActorSpec{fmt::format("rank{}.{}", r, threads[t].name), r}, [env, r, t, init_channel] {
        core::Runtime& art = *env->rt;
        const Program& prog = *env->program;
        const auto& rank_threads = prog.ranks[static_cast<size_t>(r)];
        RankEnv& re = env->ranks[static_cast<size_t>(r)];
        if (t == 0) {
          // The rank's first thread initialises its communicators, in declaration order (they
          // are collective, R1), then releases the rank's other threads.
          for (size_t c = 0; c < prog.comms.size(); ++c)
            for (core::RankId m : prog.comms[c].ranks)
              if (m == r) re.comms[c] = &art.comm_init(prog.comms[c].name, r);
          for (size_t other = 1; other < rank_threads.size(); ++other) art.channel(init_channel).send(true);
        } else {
          (void)art.channel(init_channel).recv();
        }
        const ThreadProgram& tp = rank_threads[t];
        const auto& resolved = env->ops[static_cast<size_t>(r)][t];
        for (int64_t i = 0; i < tp.repeat; ++i)
          for (size_t k = 0; k < tp.ops.size(); ++k) execute(*env, r, resolved[k], tp.ops[k], i, tp.repeat);
      });
    }
  }
}

core::RunResult run_on_sim(const Program& p, const sim::RunConfig& opts) {
  sim::SimConfig cfg = sim::sim_config(p.config);
  cfg.record_decisions = opts.record_decisions;
  cfg.backed_memory = false;  // a program's verdict never depends on its buffers' bytes
  auto policy = opts.replay ? sim::make_replay_policy(*opts.replay) : sim::make_policy(opts.strategy, opts.seed);
  sim::SimRuntime rt(p.num_ranks, cfg, std::move(policy), opts.seed);
  for (core::EventSink* s : opts.sinks) rt.events().subscribe(s);
  rt.set_nccl_observer(opts.nccl_observer);
  install(p, rt);
  return rt.run();
}

}  // namespace ppspec::program
