// The sim = GPU oracle: one scenario run on the simulator and on GPUs must give every request the
// same tokens and the same drafts, bit for bit, and post the same operations on every
// communicator (kind, dtype, shape, root or peer, label), rank by rank. A difference is a finding
// naming the first differing request and step, or communicator, rank and operation.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/event.h"
#include "core/verdict.h"
#include "engine/request_record.h"

namespace ppspec::verify {

// What each rank posted on each communicator, in order, as the words reports use (core::describe).
class OpLog final : public core::EventSink {
 public:
  void on_event(const core::Event& e) override;
  using Key = std::pair<std::string, core::RankId>;  // communicator, global rank
  const std::map<Key, std::vector<std::string>>& ops() const { return ops_; }
  // The engine step of each operation, for reports (-1 when its label names none).
  const std::map<Key, std::vector<int64_t>>& steps() const { return steps_; }
  // The engine's batches in order ("step N: [request ids]"): operation sequences are comparable
  // only between runs that scheduled the same batches.
  const std::vector<std::string>& batches() const { return batches_; }

 private:
  std::vector<std::string> batches_;
  std::map<Key, std::vector<std::string>> ops_;
  std::map<Key, std::vector<int64_t>> steps_;
};

// The first request whose tokens or verified drafts differ (requests are matched by id).
std::optional<core::Finding> compare_requests(const std::vector<engine::RequestRecord>& sim,
                                              const std::vector<engine::RequestRecord>& gpu);
// The first communicator and rank whose operation sequences differ.
std::optional<core::Finding> compare_ops(const OpLog& sim, const OpLog& gpu);
// What two runs that agree agreed on, in words ("24 requests: 1093 tokens ... identical").
std::string agreement(const std::vector<engine::RequestRecord>& requests, const OpLog& ops);

}  // namespace ppspec::verify
