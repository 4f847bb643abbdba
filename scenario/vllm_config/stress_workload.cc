// The workload a `from-vllm` scenario runs: ppspec's own, chosen to reach every mechanism the
// deployment enables, where a bug of pipeline-parallel speculative decoding lives. A burst of long
// prompts overruns the token budget (prompts chunk) and the KV cache (requests are preempted and
// resumed); every fifth request is aborted, in flight where steps overlap; a stop token ends some
// requests mid-verification; under prefix caching the prompts share system prompts; a quarter of
// the requests sample greedily beside the temperature-sampled rest; with replicas, the ones that
// finish first run dummy batches while the others serve.
#include <algorithm>
#include <fmt/format.h>

#include "scenario/vllm_config/reader.h"

namespace ppspec::vllm_config {
namespace {

constexpr int kRequestsMax = 64;  // a run of the scenario stays around a second on the simulator
constexpr int kRequestsMin = 8;
constexpr int kPromptMax = 512;  // ditto: prompts long enough to chunk any budget of 64 requests
// ppspec's model over 64 tokens, not its default 512: the stop token then comes about once in 64
// tokens, often enough to fall inside an accepted run of drafts, where the finish rules are subtle
// (a stop before the length cap in the same run). The served model's vocabulary has no bearing on
// the protocol: ppspec's model stands in for it.
constexpr int kVocab = 64;
constexpr int kStopToken = 7;
constexpr int kPriorityLevels = 3;  // a request's priority of 0, 1 or 2
constexpr int kPriorityGapUs = 50;  // a few arrivals a step: the first steps still overrun the budget

// Prompts whose burst is twice the token budget (a step's prefills chunk), inside max_model_len
// with room for the output, and no longer than a budget can take whole without chunked prefill.
void choose_prompts(scenario::ServingCase& c) {
  const int room = c.max_model_len - c.output_max - 3 * c.k - 2;
  const int mean = (2 * c.max_num_batched_tokens + c.num_requests - 1) / c.num_requests;
  int longest = std::clamp(2 * mean, 48, kPromptMax);
  if (!c.chunked_prefill) longest = std::min(longest, c.max_num_batched_tokens);
  c.prompt_max = std::max(4, std::min(longest, room));
  c.prompt_min = std::max(4, c.prompt_max / 4);
}

// A KV cache holding about half of what the running requests could fill, never less than one
// request at its longest: the scheduler preempts and resumes. And an eighth more than a step's
// token budget: a cache the first step's prompts fill before the budget admits them whole, never
// chunks one. Unless the deployment sized it.
bool choose_kv_cache(scenario::ServingCase& c) {
  if (c.num_blocks > 0) return false;  // the deployment's own (num_gpu_blocks_override)
  if (c.disaggregated) return false;   // preemption with disaggregation is not modelled
  const auto [least, enough] = scenario::kv_bounds(c);
  const int running = std::min(c.num_requests / c.dp, c.max_num_seqs / c.dp);
  const int per_request = (c.prompt_min + c.prompt_max + c.output_min + c.output_max) / 2 / c.block_size + 1;
  const int half = running * per_request / 2;
  const int budget = c.max_num_batched_tokens / c.block_size * 9 / 8;
  if (least >= enough) return false;
  c.num_blocks = std::clamp(std::max(half, budget), least, enough - 1);
  return true;
}

}  // namespace

void choose_workload(const WorkloadChoice& w, scenario::ServingCase& c, std::vector<Mapping>& notes) {
  c.num_requests = w.num_requests > 0 ? w.num_requests : std::clamp(2 * c.max_num_seqs, kRequestsMin, kRequestsMax);
  c.num_requests = std::max(c.num_requests, c.dp);
  c.output_min = 4;
  c.output_max = std::max(c.output_min, std::min(32, c.max_model_len / 4));
  choose_prompts(c);
  c.poisson = false;  // a burst: the first steps overrun the budget and the cache
  c.temperature = 0.7;
  c.greedy_every = 4;
  c.vocab = kVocab;
  c.stop_token = kStopToken;
  const bool overlapping = c.pp > 1 || c.max_concurrent_batches > c.pp;
  c.abort_every = 5;
  c.abort_after = 2;
  c.abort_in_flight = overlapping;
  if (c.enable_prefix_caching) {
    // Two system prompts of two and a half blocks: whole blocks hit, and a partial one recomputed.
    c.shared_prefix = std::min(c.prompt_min, 2 * c.block_size + c.block_size / 2);
    c.prefix_groups = 2;
  }
  // Under the priority policy the requests carry priorities, as its clients' do, and arrive over the
  // first steps: a low priority admitted before a higher one is the victim of a later preemption,
  // however far the schedule has got.
  if (c.scheduling_policy == engine::SchedulingPolicy::priority) {
    c.priority_levels = kPriorityLevels;
    c.poisson = true;
    c.mean_gap_us = kPriorityGapUs;
  }
  const bool sized = choose_kv_cache(c);
  notes.push_back(Mapping{
      "",
      fmt::format("[workload] {} requests {}, prompts {}-{} tokens (twice the token "
                  "budget at once: prompts chunk), outputs {}-{}",
                  c.num_requests, c.poisson ? fmt::format("{} us apart on average", c.mean_gap_us) : "in a burst",
                  c.prompt_min, c.prompt_max, c.output_min, c.output_max),
      ""});
  if (sized)
    notes.push_back(Mapping{"",
                            fmt::format("[model] num_blocks = {} (about half what the running requests can fill, "
                                        "and more than a step's token budget: prompts chunk, and requests are "
                                        "preempted and resumed)",
                                        c.num_blocks),
                            ""});
  notes.push_back(Mapping{
      "",
      fmt::format("[workload] temperature 0.7 with every 4th request greedy; stop token {} of a {}-token "
                  "vocabulary (about one token in {}); every 5th request aborted after 2 tokens{}{}",
                  c.stop_token, c.vocab, c.vocab, c.abort_in_flight ? ", while its step is in flight" : "",
                  c.shared_prefix > 0 ? fmt::format("; 2 shared system prompts of {} tokens", c.shared_prefix) : ""),
      ""});
  if (c.priority_levels > 1)
    notes.push_back(Mapping{"",
                            fmt::format("[workload] priority_levels = {} (each request's drawn; arriving over "
                                        "time, a higher priority is admitted after a lower one)",
                                        c.priority_levels),
                            ""});
}

}  // namespace ppspec::vllm_config
