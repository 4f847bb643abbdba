// Oracles of serving runs (DESIGN §7): golden (greedy output = the golden model's continuation)
// and PP invariance (per request: the same tokens at pp = N and pp = 1; the same drafts wherever
// both runs verified the same number of drafts at the same decode step of that request).
// Each returns the divergence with the earliest engine step, naming the request, the output token
// (or decode step), the engine step and the rank that sampled it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/verdict.h"
#include "engine/checkpoint.h"
#include "engine/config.h"
#include "engine/request_record.h"

namespace ppspec::verify {

// What the online monitors checked in the run under test (verify/monitors/model_reference.h): with it, an
// oracle's finding says where the value first differed, not only that the output did.
struct OnlineCoverage {
  uint64_t rows_checked = 0;       // activation rows of every rank compared with the reference model
  uint64_t samples_checked = 0;    // greedy samples compared with it
  uint64_t requests_followed = 0;  // requests the model reference modelled
  // ... of which it stopped following: stage 0 embedded what the model cannot follow (a position
  // past the sequence, a token outside the vocabulary: stage agreement's to report) ...
  uint64_t requests_unfollowable = 0;
  // ... forgotten while possibly still running: idle for ModelReference::kStepsIdle steps, or the
  // oldest when kRequestsKept were modelled at once. Their later steps were not checked.
  uint64_t requests_forgotten_idle = 0;
  uint64_t requests_forgotten_for_room = 0;
  // What the monitors skipped: events they act on that lacked what judging them needs, by phrase
  // (Monitor::skip), summed over ranks and replicas.
  std::map<std::string, uint64_t> monitor_skips;
};

std::optional<core::Finding> golden_oracle(const engine::EngineConfig& cfg, const engine::Checkpoint& ckpt,
                                           const std::vector<engine::RequestRecord>& requests,
                                           const OnlineCoverage& online = {});

// Stop strings, on every request whatever its sampling: the text the front end returned must be its
// returned tokens' text cut where appending them one at a time completes a stop string,
// and no token may follow the one that completed it (engine/stop_strings.h). Runs before the golden
// oracle, whose finding on the same token names no mechanism.
std::optional<core::Finding> stop_string_oracle(const engine::EngineConfig& cfg,
                                                const std::vector<engine::RequestRecord>& requests);

// vLLM's finish rules, on every request whatever its sampling (vllm/v1/core/sched/utils.py
// check_stop, run after each token appended): a request ends as soon as it samples the stop token,
// and returns at most max_tokens. The golden oracle checks greedy requests token by token; this
// needs no reference, so a temperature-sampled request that kept tokens past its stop token is caught too.
std::optional<core::Finding> finish_rule_oracle(const engine::EngineConfig& cfg,
                                                const std::vector<engine::RequestRecord>& requests);

// The same workload run two ways must give each request the same tokens, and the same drafts
// wherever both runs verified the same number of drafts at a decode step of that request.
struct Invariance {
  core::FindingKind kind;  // the finding's kind
  std::string run;         // how the run under test is named in the report, e.g. "pp = 2"
  std::string reference;   // and the reference, e.g. "pp = 1"
};
std::optional<core::Finding> invariance_oracle(const engine::EngineConfig& cfg, const Invariance& what,
                                               const std::vector<engine::RequestRecord>& run,
                                               const std::vector<engine::RequestRecord>& reference,
                                               const OnlineCoverage& online = {});

std::optional<core::Finding> pp_invariance_oracle(const engine::EngineConfig& cfg,
                                                  const std::vector<engine::RequestRecord>& run,
                                                  const std::vector<engine::RequestRecord>& reference,
                                                  const OnlineCoverage& online = {});

// Padding invariance: CUDA graphs (padded batches) and eager execution give the same tokens and drafts.
std::optional<core::Finding> padding_invariance_oracle(const engine::EngineConfig& cfg,
                                                       const std::vector<engine::RequestRecord>& graphs,
                                                       const std::vector<engine::RequestRecord>& eager,
                                                       const OnlineCoverage& online = {});

}  // namespace ppspec::verify
