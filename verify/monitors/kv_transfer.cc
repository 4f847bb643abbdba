#include "verify/monitors/kv_transfer.h"

#include <algorithm>
#include <utility>
#include <fmt/format.h>

#include "core/plural.h"
#include "core/probes.h"
#include "engine/communicators.h"
#include "engine/disaggregation.h"

namespace ppspec::verify {

namespace {

std::string kv_segment_words(const core::KvSegmentFields& s) {
  if (s.part != core::KvPart::layer) return fmt::format("the {} KV", core::to_string(s.part));
  return fmt::format("layer {}'s KV (lanes {} to {})", s.dst_layer, s.lane_begin, s.lane_begin + s.lane_count - 1);
}

}  // namespace

Monitor::KindSet KvTransferMonitor::kinds() const {
  return kind_set({core::EventKind::blocks_allocated, core::EventKind::blocks_freed, core::EventKind::request_released,
                   core::EventKind::kv_exported, core::EventKind::kv_sent, core::EventKind::kv_pulled,
                   core::EventKind::kv_ready});
}

bool KvTransferMonitor::prefill_side(const core::Event& e) const { return e.actor == engine::kPrefillEngineActor; }

void KvTransferMonitor::on_event(const core::Event& e) {
  if (facts_.kv_routes.empty()) return;
  switch (e.kind) {
    case core::EventKind::blocks_allocated: allocated(e); break;
    case core::EventKind::blocks_freed: freed(e); break;
    case core::EventKind::request_released:
      // A preempted request's next admission builds its table afresh (its old blocks may stay
      // fenced until its step in flight returns, and are freed after).
      if (e.req >= 0 && core::RequestReleasedProbe::decode(e).reason == core::Release::preempted)
        (prefill_side(e) ? prefill_tables_ : decode_tables_).erase(e.req);
      break;
    case core::EventKind::kv_exported: exported(e); break;
    case core::EventKind::kv_sent: sent(e); break;
    case core::EventKind::kv_pulled: pulled(e); break;
    case core::EventKind::kv_ready: ready(e); break;
    default: break;
  }
}

void KvTransferMonitor::report_at(const core::Event& e, std::string summary, std::vector<std::string> details) {
  core::Finding f = finding_at(e, core::Verdict::kv_violation, core::FindingKind::kv_transfer, std::move(summary));
  f.request = e.req;
  // The prefill instance's engine core numbers steps of its own: the site says which, and the
  // finding's engine step (the decode instance's numbering) is none.
  if (site_) f.sites.push_back(*std::exchange(site_, std::nullopt));
  if (e.rank >= 0)
    f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.kv", e.rank), "", -1,
                                 fmt::format("its KV connector, request {}", e.req), "", core::SiteWait::none});
  if (prefill_side(e)) {
    f.sites.push_back(core::Site{-1, std::string(engine::kPrefillEngineActor), "", -1,
                                 fmt::format("the prefill instance's engine core, its step {}", e.step), "",
                                 core::SiteWait::none});
    f.engine_step = -1;
  }
  f.details = std::move(details);
  report(std::move(f));
}

void KvTransferMonitor::allocated(const core::Event& e) {
  if (e.req < 0) return;  // warmup's synthetic requests transfer nothing
  const auto p = core::BlocksAllocatedProbe::decode(e);
  std::vector<int64_t>& t = (prefill_side(e) ? prefill_tables_ : decode_tables_)[e.req];
  const auto first = static_cast<size_t>(p.first_index);
  if (t.size() < first + p.blocks.size()) t.resize(first + p.blocks.size(), -1);
  std::copy(p.blocks.begin(), p.blocks.end(), t.begin() + static_cast<std::ptrdiff_t>(first));
}

void KvTransferMonitor::freed(const core::Event& e) {
  if (e.req < 0) return;
  // Only a free of the blocks the table holds ends it: fenced blocks of an earlier admission are
  // freed after the next admission built its table.
  auto& tables = prefill_side(e) ? prefill_tables_ : decode_tables_;
  const auto table = tables.find(e.req);
  const auto blocks = core::BlocksFreedProbe::decode(e).blocks;
  if (table == tables.end() || std::none_of(blocks.begin(), blocks.end(), [&](int64_t b) {
        return std::find(table->second.begin(), table->second.end(), b) != table->second.end();
      }))
    return;
  tables.erase(table);
  if (!prefill_side(e)) {
    const auto t = transfers_.find(e.req);
    if (t != transfers_.end() && !t->second.exported.empty() && !t->second.ready)
      report_freed_while_pulling(e, t->second);
    return;
  }
  prefill_freed_at_[e.req] = e.step;
  const auto it = transfers_.find(e.req);
  if (it == transfers_.end() || it->second.exported.empty()) return;
  const size_t expected = legs_expected().size();
  if (it->second.sent.size() >= expected) return;
  report_at(e,
            fmt::format("the prefill instance freed request {}'s KV blocks while its transfer was in flight: {} of "
                        "the {} sends of its prompt's KV had completed",
                        e.req, it->second.sent.size(), expected),
            {"the decode instance pulls these blocks after the prefill finished: a block freed before every send "
             "completed can be given to another request and overwritten before it is read",
             "fix: the prefill instance keeps a finished request's blocks until every consumer's transfer of them "
             "completed (vLLM NIXL: delay_free_blocks, freed on the consumers' notifications)"});
}

void KvTransferMonitor::exported(const core::Event& e) {
  const auto p = core::KvExportedProbe::decode(e);
  Transfer& t = transfers_[e.req];
  t.prompt = p.prompt_tokens;
  t.exported.assign(p.blocks.begin(), p.blocks.end());
  const auto held = prefill_tables_.find(e.req);
  if (held == prefill_tables_.end() && prefill_freed_at_.contains(e.req)) {
    report_freed_before_export(e, prefill_freed_at_[e.req]);
    return;
  }
  t.prefill_table = held == prefill_tables_.end() ? std::vector<int64_t>{} : held->second;
  const std::vector<int64_t>& table = t.prefill_table;
  const int bs = facts_.block_size;
  const auto prompt_blocks = static_cast<size_t>(engine::kv_blocks_of_prompt(static_cast<int>(p.prompt_tokens), bs));
  for (size_t i = 0; i < t.exported.size(); ++i) {
    const int64_t b = t.exported[i];
    if (i < prompt_blocks && i < table.size() && table[i] == b) continue;
    std::vector<std::string> why;
    if (i >= prompt_blocks)
      why.push_back(fmt::format(
          "its prompt of {} tokens fills {} of {}; block {} is its block {}, which holds no prompt token: the "
          "lookahead slots the scheduler reserved for the drafter (vLLM #44151)",
          p.prompt_tokens, core::count_of(static_cast<int64_t>(prompt_blocks), "block"), bs, b, i));
    else
      why.push_back(
          fmt::format("its block {} is {}", i, i < table.size() ? fmt::format("block {}", table[i]) : "none"));
    why.push_back(
        "the decode instance reads the exported list's tail (NIXL remote_block_ids[-len(local):]): an extra block "
        "shifts every block it pulls by one position, and it recomputes from KV that is not its prompt's");
    why.push_back(
        "fix: export the blocks of the computed tokens only (vLLM get_block_ids_for_computed_tokens, #46694)");
    report_at(
        e,
        fmt::format("the prefill instance exported {} for request {}'s {}-token prompt; block {} at "
                    "position {} of the list is not the prompt's block {}",
                    core::count_of(static_cast<int64_t>(t.exported.size()), "block"), e.req, p.prompt_tokens, b, i, i),
        std::move(why));
    return;
  }
}

void KvTransferMonitor::report_freed_before_export(const core::Event& e, int64_t freed_at) {
  report_at(
      e,
      fmt::format("the prefill instance exported request {}'s blocks {} for the decode instance to pull, after it "
                  "freed them at its step {}",
                  e.req, token_list(transfers_[e.req].exported), freed_at),
      {"a block freed before the decode instance read it may hold another request's KV by the time it is "
       "pulled (vLLM #21570: the prefill side's timeout freed the blocks while the decode side queued the "
       "request)",
       "fix: keep a finished request's blocks until every consumer's transfer of them completed, and have the "
       "decode side recompute a request whose blocks expired"});
}

bool KvTransferMonitor::on_route(int64_t producer, int64_t consumer, const core::KvSegmentFields& s) const {
  for (const engine::KvRoute& r : facts_.kv_routes)
    if (r.producer == producer && r.consumer == consumer)
      for (const engine::KvSegment& g : r.segments)
        if (g.part == s.part && g.dst_layer == s.dst_layer && g.lane_begin == s.lane_begin &&
            g.lane_count == s.lane_count)
          return true;
  return false;
}

std::set<KvTransferMonitor::Leg> KvTransferMonitor::legs_expected() const {
  std::set<Leg> out;
  for (const engine::KvRoute& r : facts_.kv_routes)
    for (const engine::KvSegment& s : r.segments)
      out.emplace(r.producer, r.consumer, static_cast<int64_t>(s.part), s.dst_layer, s.lane_begin);
  return out;
}

void KvTransferMonitor::sent(const core::Event& e) {
  const auto p = core::KvSentProbe::decode(e);
  transfers_[e.req].sent.emplace(e.rank, p.consumer, static_cast<int64_t>(p.segment.part), p.segment.dst_layer,
                                 p.segment.lane_begin);
}

void KvTransferMonitor::pulled(const core::Event& e) {
  const auto p = core::KvPulledProbe::decode(e);
  const core::KvSegmentFields& s = p.segment;
  if (s.part == core::KvPart::layer && s.src_layer != s.dst_layer) {
    report_at(e,
              fmt::format("rank {} wrote layer {}'s KV of request {}, pulled from prefill rank {}, into its layer {}",
                          e.rank, s.src_layer, e.req, p.producer, s.dst_layer),
              {"the consumer paired the producer's per-stage cache tensors with its own by position, not by layer: "
               "a prefill stage's first layer lands in the decode rank's first layer (vllm-ascend #15900)",
               "fix: pair the caches by layer name in the handshake (each layer's address by its name)"});
    return;
  }
  if (!on_route(p.producer, e.rank, s)) {
    report_at(e,
              fmt::format("rank {} pulled {} of request {} from prefill rank {}, which no route between them "
                          "carries",
                          e.rank, kv_segment_words(s), e.req, p.producer),
              {"producer and consumer disagree on the layer band or the lanes a pair exchanges: a decode rank "
               "must read each of its layers from the prefill stage that holds it, over the lanes both hold "
               "(vLLM #43366, #45880)"});
    return;
  }
  check_pairs(e, p);
  transfers_[e.req].pulled.emplace(p.producer, e.rank, static_cast<int64_t>(s.part), s.dst_layer, s.lane_begin);
}

void KvTransferMonitor::check_pairs(const core::Event& e, const core::KvPulledProbe& p) {
  const std::vector<int64_t>& remote_table = transfers_[e.req].prefill_table;
  const std::vector<int64_t>& local_table = decode_tables_[e.req];
  const int bs = facts_.block_size;
  for (size_t i = 0; i < p.pair_count(); ++i) {
    const int64_t remote = p.pairs[i * 2];
    const int64_t local = p.pairs[i * 2 + 1];
    const bool local_ok = i < local_table.size() && local_table[i] == local;
    const bool remote_ok = i < remote_table.size() && remote_table[i] == remote;
    if (local_ok && remote_ok) continue;
    const auto j = std::find(remote_table.begin(), remote_table.end(), remote) - remote_table.begin();
    const std::string source =
        static_cast<size_t>(j) < remote_table.size()
            ? fmt::format("the prefill instance's block {} (its block {}, positions {} to {})", remote, j, j * bs,
                          (j + 1) * bs - 1)
            : fmt::format("the prefill instance's block {}, which request {} does not hold there", remote, e.req);
    report_at(
        e,
        fmt::format("rank {} pulled {} of request {}: its block {} (positions {} to {}) received {}", e.rank,
                    kv_segment_words(p.segment), e.req, local, static_cast<int64_t>(i) * bs,
                    static_cast<int64_t>(i + 1) * bs - 1, source),
        {local_ok ? "the block map is shifted: the consumer pairs its blocks with the producer's exported list "
                    "from its tail, and the list holds a block that is not the prompt's (vLLM #44151)"
                  : fmt::format("block {} is not request {}'s block {} on the decode instance", local, e.req, i)});
    return;
  }
}

// The decode rank's connector whose pull of `leg` has not completed.
core::Site KvTransferMonitor::pull_site(const Leg& leg, int64_t req) {
  const auto [producer, consumer, part, layer, lanes] = leg;
  return core::Site{static_cast<core::RankId>(consumer),
                    fmt::format("rank{}.kv", consumer),
                    "",
                    -1,
                    fmt::format("its pull of request {}'s KV from prefill rank {}, not completed", req, producer),
                    "",
                    core::SiteWait::none};
}

// A decode-side free before every rank's pulls completed: a pull still writes the blocks.
void KvTransferMonitor::report_freed_while_pulling(const core::Event& e, const Transfer& t) {
  const auto freed = core::BlocksFreedProbe::decode(e);
  for (const Leg& leg : legs_expected())
    if (!t.pulled.contains(leg)) {
      site_ = pull_site(leg, e.req);
      break;
    }
  report_at(e,
            fmt::format("the decode instance freed request {}'s KV blocks {} ({}) while its pulls were in flight: {} "
                        "of the {} pulls of its prompt's KV had completed",
                        e.req, token_list(std::vector<int64_t>(freed.blocks.begin(), freed.blocks.end())),
                        core::to_string(freed.reason), t.pulled.size(), legs_expected().size()),
            {"a pull still in flight writes into blocks the engine core may give to the next request, which then "
             "reads the freed request's KV as its own (vLLM #32255; SGLang #35049)",
             "fix: hold the blocks of a request aborted in WAITING_FOR_REMOTE_KVS until its pulls complete (vLLM: "
             "delay_free_blocks, freed when the workers report finished_recving)"});
}

void KvTransferMonitor::ready(const core::Event& e) {
  Transfer& t = transfers_[e.req];
  t.ready = true;
  for (const Leg& leg : legs_expected()) {
    if (t.pulled.contains(leg)) continue;
    const auto [producer, consumer, part, layer, lanes] = leg;
    site_ = pull_site(leg, e.req);
    report_at(e,
              fmt::format("the decode instance took request {}'s KV as pulled after {}, before rank {}'s pull "
                          "of {} from prefill rank {} completed",
                          e.req, core::count_of(core::KvReadyProbe::decode(e).reports, "report"), consumer,
                          part == static_cast<int64_t>(core::KvPart::layer)
                              ? fmt::format("layer {}'s KV", layer)
                              : fmt::format("the {} KV", core::to_string(static_cast<core::KvPart>(part))),
                          producer),
              {"a request admitted before every consumer rank's transfer completed recomputes from blocks still "
               "being written: the decode instance must count one completion per consumer rank (vLLM waits for "
               "every worker's finished_recving)"});
    return;
  }
}

}  // namespace ppspec::verify
