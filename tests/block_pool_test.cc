// The prefix cache (engine/block_pool.h, engine/scheduler_prefix.cc): hits and misses, the chained
// hash, least-recently-used eviction tail first, reference counts, a hash evicted when its block is
// given again, the hit capped at num_tokens - 1 (and, under full_prefix_hit, not), and the
// scheduler's admission of a hit: its table, its start, its ledger; a resumed request re-hitting.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/block_pool.h"
#include "engine/scheduler.h"
#include "scenario/program_loader.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"

namespace ppspec::engine {
namespace {

std::vector<uint64_t> chain_of(const std::vector<std::vector<int32_t>>& blocks) {
  std::vector<uint64_t> h;
  for (size_t i = 0; i < blocks.size(); ++i)
    h.push_back(BlockPool::block_hash(i == 0 ? BlockPool::kNoHash : h.back(), static_cast<int64_t>(i), blocks[i]));
  return h;
}

std::vector<int32_t> take(BlockPool& p, int n) {
  std::vector<int32_t> out;
  p.allocate(n, out);
  return out;
}

TEST(BlockPool, WithoutCachingTheBlockFreedLastIsGivenFirst) {
  BlockPool p(8, false);
  EXPECT_EQ(take(p, 3), (std::vector<int32_t>{1, 2, 3}));
  p.release(std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(take(p, 2), (std::vector<int32_t>{3, 2}))
      << "the scheduler's free list was a stack: traces keep their blocks";
  EXPECT_EQ(p.free_count(), 5);
}

TEST(BlockPool, TheHashChainsContentAndPosition) {
  const std::vector<int32_t> a{5, 6, 7, 8}, b{5, 6, 7, 9};
  EXPECT_EQ(BlockPool::block_hash(BlockPool::kNoHash, 0, a), BlockPool::block_hash(BlockPool::kNoHash, 0, a))
      << "deterministic";
  EXPECT_NE(BlockPool::block_hash(BlockPool::kNoHash, 0, a), BlockPool::block_hash(BlockPool::kNoHash, 0, b))
      << "content";
  EXPECT_NE(BlockPool::block_hash(BlockPool::kNoHash, 0, a), BlockPool::block_hash(BlockPool::kNoHash, 1, a))
      << "position";
  // The same block after another first block: another hash, so no hit past a difference.
  EXPECT_NE(chain_of({a, a})[1], chain_of({b, a})[1]);
}

TEST(BlockPool, ALookupHitsTheLongestRunOfLeadingCachedBlocks) {
  BlockPool p(8, true);
  const std::vector<uint64_t> h = chain_of({{1, 2}, {3, 4}, {5, 6}});
  const std::vector<int32_t> blocks = take(p, 3);
  ASSERT_TRUE(p.cache(blocks[0], h[0]));
  ASSERT_TRUE(p.cache(blocks[2], h[2]));  // block 1 was never cached: block 2 is no prefix
  EXPECT_EQ(p.lookup(h), (std::vector<int32_t>{blocks[0]}));
  EXPECT_TRUE(p.lookup(chain_of({{1, 3}, {3, 4}})).empty()) << "a miss";
  ASSERT_TRUE(p.cache(blocks[1], h[1]));
  EXPECT_EQ(p.lookup(h), blocks);
  // Another block with content already cached stays uncached.
  const std::vector<int32_t> copy = take(p, 1);
  EXPECT_FALSE(p.cache(copy[0], h[0]));
  EXPECT_FALSE(p.is_cached(copy[0]));
  EXPECT_EQ(p.cached_count(), 3);
}

TEST(BlockPool, ReferenceCountsKeepASharedBlockOutOfTheFreeQueue) {
  BlockPool p(6, true);
  const std::vector<int32_t> a = take(p, 2);
  const std::vector<uint64_t> h = chain_of({{1}, {2}});
  ASSERT_TRUE(p.cache(a[0], h[0]));
  ASSERT_TRUE(p.cache(a[1], h[1]));
  p.touch(a);  // a second request hits both
  EXPECT_EQ(p.ref_count(a[0]), 2);
  p.release(a);  // the first lets go
  EXPECT_EQ(p.ref_count(a[0]), 1);
  EXPECT_EQ(p.free_count(), 3);
  p.release(a);  // the second too: free, and still cached
  EXPECT_EQ(p.free_count(), 5);
  EXPECT_EQ(p.lookup(h), a) << "a free block keeps its hash";
  // A hit on free blocks takes them out of the queue.
  EXPECT_EQ(p.free_among(a), 2);
  p.touch(a);
  EXPECT_EQ(p.free_count(), 3);
  EXPECT_EQ(p.free_among(a), 0);
}

// vLLM's order: never-used blocks first, then the least recently freed; a request's blocks are
// freed tail first, so its last block is evicted before its first.
TEST(BlockPool, EvictionTakesTheLeastRecentlyFreedAndARequestsTailFirst) {
  BlockPool p(6, true);  // blocks 1..5
  const std::vector<int32_t> a = take(p, 3);
  EXPECT_EQ(a, (std::vector<int32_t>{1, 2, 3}));
  const std::vector<uint64_t> h = chain_of({{1}, {2}, {3}});
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(p.cache(a[i], h[i]));
  p.release(a);
  EXPECT_EQ(take(p, 2), (std::vector<int32_t>{4, 5})) << "never used ones first";
  EXPECT_EQ(p.evictions(), 0);
  EXPECT_EQ(take(p, 1), (std::vector<int32_t>{3})) << "the request's tail block";
  EXPECT_EQ(p.evictions(), 1);
  EXPECT_FALSE(p.is_cached(3)) << "given again: its hash is evicted";
  EXPECT_EQ(p.lookup(h), (std::vector<int32_t>{1, 2})) << "the head of the chain still hits";
  EXPECT_EQ(take(p, 1), (std::vector<int32_t>{2}));
  EXPECT_EQ(p.lookup(h), (std::vector<int32_t>{1}));
}

// ---- the scheduler's side ----

EngineConfig prefix_config(bool fault = false) {
  EngineConfig c;
  c.model.block_size = 4;
  c.serving.max_num_seqs = 4;
  c.serving.max_num_batched_tokens = 64;
  c.serving.enable_prefix_caching = true;
  c.workload.prompt_max = 16;
  c.workload.output_max = 8;
  c.faults.full_prefix_hit = fault;
  return c;
}

RequestSpec prompt_of(int64_t id, std::vector<int32_t> prompt, int max_tokens = 4) {
  RequestSpec r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  return r;
}

std::vector<LedgerEntry> ledger_of(std::vector<LedgerEntry> all, LedgerEntry::What what, int64_t req) {
  std::erase_if(all, [&](const LedgerEntry& e) { return e.what != what || e.req != req; });
  return all;
}

// Two requests with a 10-token common prefix (bs 4): the second, admitted in the same step, hits
// the first's two full blocks, which that step computes; its row starts at token 8 and its table
// at column 0 holds the shared blocks.
TEST(PrefixCache, ARequestAdmittedBehindTheSamePrefixStartsAfterItsHit) {
  const std::vector<int32_t> shared{9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  std::vector<int32_t> p0 = shared, p1 = shared;
  p0.insert(p0.end(), {11, 12});
  p1.insert(p1.end(), {21, 22, 23});
  Scheduler s(prefix_config(), {prompt_of(0, p0), prompt_of(1, p1)});
  s.admit_until(0);
  const auto so = s.schedule(0);
  ASSERT_EQ(so->requests.size(), 2u);
  const ScheduledRequest& second = so->requests[1];
  EXPECT_EQ(second.num_computed, 8);
  EXPECT_EQ(second.num_tokens, 5);
  EXPECT_EQ(second.first_new_block, 0);
  const std::vector<int32_t>& first_blocks = s.records()[0].blocks;
  ASSERT_GE(second.new_blocks.size(), 3u);
  EXPECT_EQ(std::vector<int32_t>(second.new_blocks.begin(), second.new_blocks.begin() + 2),
            std::vector<int32_t>(first_blocks.begin(), first_blocks.begin() + 2));
  EXPECT_EQ(so->new_requests[1].num_computed, 8) << "the workers build its inputs from token 8";
  const auto ledger = s.take_ledger();
  EXPECT_EQ(ledger_of(ledger, LedgerEntry::What::cached, 0).at(0).blocks.size(), 3u) << "12 tokens: 3 full blocks";
  EXPECT_EQ(ledger_of(ledger, LedgerEntry::What::shared, 1).at(0).blocks.size(), 2u);
  EXPECT_EQ(s.pool().ref_count(first_blocks[0]), 2);
}

// A prompt of 8 tokens wholly in the cache: the hit stops at 7 tokens (one block), so the second
// block is recomputed into a block of its own; under full_prefix_hit both blocks are hit and the
// last token is recomputed into the second, shared one (vLLM #11186).
TEST(PrefixCache, AHitIsCappedAtAllButTheLastTokenUnlessTheFaultIsOn) {
  for (bool fault : {false, true}) {
    const std::vector<int32_t> prompt{1, 2, 3, 4, 5, 6, 7, 8};
    Scheduler s(prefix_config(fault), {prompt_of(0, prompt), prompt_of(1, prompt)});
    s.admit_until(0);
    const auto so = s.schedule(0);
    ASSERT_EQ(so->requests.size(), 2u);
    const ScheduledRequest& second = so->requests[1];
    EXPECT_EQ(second.num_computed, fault ? 7 : 4) << "fault " << fault;
    EXPECT_EQ(second.num_tokens, fault ? 1 : 4);
    EXPECT_EQ(ledger_of(s.take_ledger(), LedgerEntry::What::shared, 1).at(0).blocks.size(), fault ? 2u : 1u);
  }
}

// Preempted, a request gives its blocks back with their hashes; resumed, its prefill (prompt and
// output) hits what is left of them.
TEST(PrefixCache, AResumedRequestHitsItsOwnFreedBlocks) {
  EngineConfig c = prefix_config();
  c.model.num_blocks = 9;  // 8 usable: two requests of up to 5 blocks each cannot both grow
  std::vector<int32_t> p0(12, 3), p1(11, 4);
  Scheduler s(c, {prompt_of(0, p0, 8), prompt_of(1, p1, 8)});
  s.admit_until(0);
  bool resumed_with_hit = false;
  for (int64_t step = 0; step < 60 && !s.done(); ++step) {
    const auto so = s.schedule(step);
    if (!so) break;
    for (const NewRequest& n : so->new_requests)
      resumed_with_hit = resumed_with_hit || (n.id == 1 && n.num_computed > 0);
    ModelOutput out;
    out.step = step;
    for (const ScheduledRequest& r : so->requests) {
      RowOutput row;
      if (r.produces_sample()) {
        row.num_sampled = 1;
        row.num_rejected = r.decode() ? r.num_tokens - 1 : 0;
        row.tokens = {5};
      }
      out.rows.push_back(row);
    }
    s.update(*so, out);
  }
  EXPECT_EQ(s.records()[1].preemptions > 0, true);
  EXPECT_TRUE(resumed_with_hit) << "request 1 resumed from its own cached blocks";
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.pool().free_count(), 8) << "every block is free again";
}

// ---- whole runs ----

serving::ServingRun run_prefix_scenario(const std::string& name, bool caching) {
  const std::string file = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/" + name;
  serving::ServingScenario s = scenario::read_serving(scenario::parse_toml_file(file), file);
  s.config.serving.enable_prefix_caching = caching;
  sim::RunConfig o;
  o.seed = 1;
  return serving::run_on_sim(s, o);
}

// The greedy prefix-cache scenarios give every request the tokens the same workload gives without
// the cache (the golden oracle holds both to the model; this holds them to each other), while
// the cache is really used: blocks reused, and in the small caches evicted.
TEST(PrefixCache, ScenariosGiveTheTokensTheyGiveWithoutTheCache) {
  for (const char* name : {"pp1_prefix_cache.toml", "pp2_prefix_cache_eviction.toml", "pp4_prefix_cache.toml"}) {
    const serving::ServingRun with = run_prefix_scenario(name, true), without = run_prefix_scenario(name, false);
    ASSERT_EQ(with.result.verdict, core::Verdict::pass) << name;
    ASSERT_EQ(without.result.verdict, core::Verdict::pass) << name;
    EXPECT_GT(with.stats.prefix_hit_blocks, 0) << name;
    EXPECT_GT(with.stats.prefix_evictions, 0) << name;
    EXPECT_EQ(without.stats.prefix_hit_blocks, 0) << name;
    ASSERT_EQ(with.requests.size(), without.requests.size()) << name;
    for (size_t i = 0; i < with.requests.size(); ++i)
      EXPECT_EQ(with.requests[i].output, without.requests[i].output) << name << " " << i;
  }
}

}  // namespace
}  // namespace ppspec::engine
