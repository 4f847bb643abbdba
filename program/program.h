// A program scenario: ranks, communicators, streams, and each rank's ordered operations, written
// against the runtime interface. The TOML reader (scenario/) produces one; property tests generate
// them directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expect.h"
#include "core/dtype.h"
#include "core/types.h"
#include "core/verdict.h"
#include "core/strategy.h"
#include "core/world_config.h"

namespace ppspec::program {

enum class OpType : uint8_t {
  send,
  recv,
  broadcast,
  all_reduce,
  all_gather,
  all_to_all,
  group_start,
  group_end,
  launch,
  preload,
  record,
  wait_event,
  event_sync,
  stream_sync,
  device_sync,
  malloc,
  sleep,
  capture_begin,
  capture_end,
  graph_launch,
  wait_flag,
  set_flag,
};

std::string_view to_string(OpType t);
std::optional<OpType> parse_op_type(std::string_view s);
std::string_view op_type_names();
bool is_comm_op(OpType t);
bool is_p2p_op(OpType t);  // send or recv

struct ProgramOp {
  OpType type = OpType::sleep;
  std::string comm;
  core::RankId peer = -1;  // send/recv: the peer; broadcast: the root (global ranks)
  core::Dtype dtype = core::Dtype::f32;
  int64_t count = 1;  // elements; malloc: bytes
  std::string stream;
  std::string label;
  int64_t step = -1;  // the label's step; -1: the repeat iteration when repeat > 1
  std::string kernel;
  std::string spec;
  std::string event;
  std::string graph;
  std::string flag;
  core::Time duration = -1;  // launch: fixed duration; sleep: how long
  std::string origin;        // "file.toml:12"
  std::string note;          // written as a comment after the operation (import: its record and call site)
};

struct ThreadProgram {
  std::string name = "host";
  int64_t repeat = 1;
  std::vector<ProgramOp> ops;
};

struct CommDecl {
  std::string name;
  std::vector<core::RankId> ranks;
};

using Expect = core::Expect;

struct Explore {
  uint64_t seed = 1;
  uint64_t seeds = 1;
  core::StrategySpec strategy;
};

struct Program {
  std::string name;
  std::string file;
  std::string description;
  int num_ranks = 0;
  std::vector<std::string> streams{"main"};
  std::vector<CommDecl> comms;
  std::vector<std::vector<ThreadProgram>> ranks;  // [rank][thread]
  core::WorldConfig config;
  core::Time hang_timeout = 20 * core::kSec;  // real backend: the watchdog's limit
  Expect expect;
  Explore explore;
};

}  // namespace ppspec::program
