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
  std::map<std::string, core::Communicator*, std::less<>> comms;
  std::map<std::string, core::Graph, std::less<>> graphs;
};

// Everything the actors of one run share; owned by the runtime's actors through a shared_ptr.
struct Env {
  const Program* program = nullptr;
  core::Runtime* rt = nullptr;
  std::vector<RankEnv> ranks;
  // buffers[rank][thread][op]: each operation owns a buffer (two for all_gather).
  std::vector<std::vector<std::vector<std::pair<core::Buffer, core::Buffer>>>> buffers;
};

int comm_rank(const Program& p, std::string_view comm, core::RankId r) {
  for (const CommDecl& c : p.comms) {
    if (c.name != comm) continue;
    for (size_t i = 0; i < c.ranks.size(); ++i)
      if (c.ranks[i] == r) return static_cast<int>(i);
  }
  throw std::logic_error(fmt::format("rank{} is not in communicator '{}'", r, comm));
}

void execute(Env& env, core::RankId r, size_t thread, size_t index, const ProgramOp& op, int64_t iteration,
             int64_t repeat) {
  core::Runtime& rt = *env.rt;
  core::Device& dev = rt.device(r);
  RankEnv& re = env.ranks[static_cast<size_t>(r)];
  rt.set_call_site(op.origin);
  const core::Stream stream = op.stream.empty() ? core::Stream{} : dev.stream(op.stream);
  const core::Label label{op.label, op.step >= 0 ? op.step : (repeat > 1 ? iteration : -1)};
  const auto& bufs = env.buffers[static_cast<size_t>(r)][thread][index];
  auto comm = [&]() -> core::Communicator& { return *re.comms.at(op.comm); };
  switch (op.type) {
    case OpType::send: comm().send(bufs.first, comm_rank(*env.program, op.comm, op.peer), stream, label); return;
    case OpType::recv: comm().recv(bufs.first, comm_rank(*env.program, op.comm, op.peer), stream, label); return;
    case OpType::broadcast:
      comm().broadcast(bufs.first, comm_rank(*env.program, op.comm, op.peer), stream, label);
      return;
    case OpType::all_reduce: comm().all_reduce(bufs.first, core::ReduceOp::sum, stream, label); return;
    case OpType::all_gather: comm().all_gather(bufs.first, bufs.second, stream, label); return;
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
  }
}

}  // namespace

void install(const Program& p, core::Runtime& rt) {
  auto env = std::make_shared<Env>();
  env->program = &p;
  env->rt = &rt;
  env->ranks.resize(static_cast<size_t>(p.num_ranks));
  for (const CommDecl& c : p.comms) rt.declare_comm(c.name, c.ranks);
  env->buffers.resize(static_cast<size_t>(p.num_ranks));
  for (core::RankId r = 0; r < p.num_ranks; ++r) {
    core::Device& dev = rt.device(r);
    for (const std::string& s : p.streams) (void)dev.stream(s);
    const auto& threads = p.ranks[static_cast<size_t>(r)];
    auto& rank_bufs = env->buffers[static_cast<size_t>(r)];
    rank_bufs.resize(threads.size());
    for (size_t t = 0; t < threads.size(); ++t) {
      for (const ProgramOp& op : threads[t].ops) {
        std::pair<core::Buffer, core::Buffer> b;
        if (is_comm_op(op.type)) {
          b.first = dev.alloc(op.dtype, core::Shape{op.count, 1}, op.label);
          b.first.mark_all_written();
          if (op.type == OpType::all_gather) {
            int members = 0;
            for (const CommDecl& c : p.comms)
              if (c.name == op.comm) members = static_cast<int>(c.ranks.size());
            b.second = dev.alloc(op.dtype, core::Shape{op.count * members, 1}, op.label);
          }
        }
        rank_bufs[t].push_back(b);
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
          for (const CommDecl& c : prog.comms)
            for (core::RankId m : c.ranks)
              if (m == r) re.comms[c.name] = &art.comm_init(c.name, r);
          for (size_t other = 1; other < rank_threads.size(); ++other) art.channel(init_channel).send(true);
        } else {
          (void)art.channel(init_channel).recv();
        }
        const ThreadProgram& tp = rank_threads[t];
        for (int64_t i = 0; i < tp.repeat; ++i)
          for (size_t k = 0; k < tp.ops.size(); ++k) execute(*env, r, t, k, tp.ops[k], i, tp.repeat);
      });
    }
  }
}

core::RunResult run_on_sim(const Program& p, const SimRunOptions& opts) {
  sim::SimConfig cfg = p.config;
  cfg.record_decisions = opts.record_decisions;
  auto policy = opts.replay ? sim::make_replay_policy(*opts.replay) : sim::make_policy(opts.strategy, opts.seed);
  sim::SimRuntime rt(p.num_ranks, cfg, std::move(policy), opts.seed);
  for (core::EventSink* s : opts.sinks) rt.events().subscribe(s);
  install(p, rt);
  return rt.run();
}

}  // namespace ppspec::program
