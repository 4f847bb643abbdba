#include "program/toml_writer.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/event.h"

namespace ppspec::program {
namespace {

std::string toml_string(std::string_view s) {
  std::string out;
  core::append_json_string(out, s);  // JSON string escapes are valid TOML basic strings
  return out;
}

// A TOML comment of one line, or nothing.
std::string comment(const std::string& note) {
  if (note.empty()) return "";
  std::string line = note;
  std::replace(line.begin(), line.end(), '\n', ' ');
  return "  # " + line;
}

double us(core::Time t) { return static_cast<double>(t) / static_cast<double>(core::kUs); }

std::string op_line(const ProgramOp& op) {
  std::string s = fmt::format("{{ op = \"{}\"", to_string(op.type));
  auto add = [&s](std::string_view key, const std::string& value) { s += fmt::format(", {} = {}", key, value); };
  if (is_comm_op(op.type)) {
    add("comm", toml_string(op.comm));
    if (is_p2p_op(op.type)) add("peer", std::to_string(op.peer));
    if (op.type == OpType::broadcast) add("root", std::to_string(op.peer));
    add("dtype", toml_string(core::to_string(op.dtype)));
    add("count", std::to_string(op.count));
    add("stream", toml_string(op.stream));
    if (!op.label.empty()) add("label", toml_string(op.label));
    if (op.step >= 0) add("step", std::to_string(op.step));
  } else {
    switch (op.type) {
      case OpType::launch:
      case OpType::preload:
        add("kernel", toml_string(op.kernel));
        if (!op.spec.empty()) add("spec", toml_string(op.spec));
        if (op.type == OpType::launch) {
          add("stream", toml_string(op.stream));
          if (op.duration >= 0) add("duration_us", fmt::format("{}", us(op.duration)));
        }
        break;
      case OpType::record:
      case OpType::wait_event:
        add("event", toml_string(op.event));
        add("stream", toml_string(op.stream));
        break;
      case OpType::event_sync: add("event", toml_string(op.event)); break;
      case OpType::stream_sync:
      case OpType::capture_begin: add("stream", toml_string(op.stream)); break;
      case OpType::capture_end:
      case OpType::graph_launch:
        add("stream", toml_string(op.stream));
        add("graph", toml_string(op.graph));
        break;
      case OpType::malloc: add("bytes", std::to_string(op.count)); break;
      case OpType::wait_flag:
      case OpType::set_flag:
        add("flag", toml_string(op.flag));
        add("stream", toml_string(op.stream));
        break;
      case OpType::sleep: add("us", fmt::format("{}", us(op.duration))); break;
      default: break;
    }
  }
  return s + " }";
}

}  // namespace

std::string to_toml(const Program& p) {
  const core::WorldConfig& c = p.config;
  std::string s = fmt::format("kind = \"program\"\nname = {}\n", toml_string(p.name));
  if (!p.description.empty()) s += fmt::format("description = {}\n", toml_string(p.description));
  s += fmt::format("ranks = {}\nstreams = [", p.num_ranks);
  for (size_t i = 0; i < p.streams.size(); ++i) s += (i ? ", " : "") + toml_string(p.streams[i]);
  s += "]\n\n[runtime]\n";
  s += fmt::format("module_loading = \"{}\"\nconcurrency = \"{}\"\non_mismatch = \"{}\"\nstrict = {}\n",
                   core::to_string(c.module_loading), core::to_string(c.concurrency), core::to_string(c.on_mismatch),
                   c.strict);
  s += fmt::format("runtime_connect = {}\neager_bytes = {}\nunit_bytes = {}\nmax_steps = {}\njitter = {}\n",
                   c.runtime_connect, c.eager_bytes, c.unit_bytes, c.max_steps, c.jitter);
  if (p.hang_timeout != Program{}.hang_timeout)
    s += fmt::format("hang_timeout_s = {}\n", static_cast<double>(p.hang_timeout) / core::kSec);
  const core::CostModel& m = c.cost;
  s += fmt::format(
      "\n[runtime.cost]\nhost_call_us = {}\nkernel_us = {}\nkernel_per_kwork_us = {}\ncomm_latency_us = {}\n"
      "comm_gbps = {}\nmodule_load_us = {}\njit_compile_us = {}\ncomm_init_us = {}\nconnect_us = {}\nmemcpy_us = {}\n",
      us(m.host_call), us(m.kernel), us(m.kernel_per_kwork), us(m.comm_latency),
      static_cast<double>(m.comm_bytes_per_us) / 1000.0, us(m.module_load), us(m.jit_compile), us(m.comm_init),
      us(m.connect), us(m.memcpy));
  for (const CommDecl& d : p.comms) {
    s += fmt::format("\n[[communicator]]\nname = {}\nranks = [", toml_string(d.name));
    for (size_t i = 0; i < d.ranks.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", d.ranks[i]);
    s += "]\n";
  }
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    const auto& threads = p.ranks[r];
    const bool single = threads.size() == 1 && threads[0].name == "host";
    for (const ThreadProgram& t : threads) {
      s += single ? fmt::format("\n[rank.{}]\n", r) : fmt::format("\n[rank.{}.thread.{}]\n", r, t.name);
      if (t.repeat != 1) s += fmt::format("repeat = {}\n", t.repeat);
      s += "ops = [\n";
      for (const ProgramOp& op : t.ops) s += "  " + op_line(op) + "," + comment(op.note) + "\n";
      s += "]\n";
    }
  }
  s += fmt::format("\n[explore]\nseed = {}\nseeds = {}\nstrategy = \"{}\"\n", p.explore.seed, p.explore.seeds,
                   p.explore.strategy.str());
  s += fmt::format("\n[expect]\nverdict = \"{}\"\n", core::to_string(p.expect.verdict));
  if (p.expect.kind) s += fmt::format("kind = {}\n", toml_string(core::to_string(*p.expect.kind)));
  if (p.expect.gpu_verdict) s += fmt::format("gpu_verdict = \"{}\"\n", core::to_string(*p.expect.gpu_verdict));
  return s;
}

}  // namespace ppspec::program
