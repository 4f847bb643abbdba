// Memory bounds: every buffer is sized from what is really written (warmup included), and every
// kernel access is checked, so an overflow is an error naming the kernel, never a silent `pass`.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/assert.h"
#include "core/buffer.h"
#include "engine/kernel_launch.h"
#include "engine/span_of.h"
#include "tests/harness.h"
#include "engine/scheduler.h"
#include "engine/workload.h"
#include "kernels/launch.h"
#include "kernels/prepare_inputs.h"
#include "kernels/span.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"
#include "sim/sanitizer.h"
#include "tests/test_util.h"
#include "tools/run_command.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

using kernels::KernelOutOfBounds;
using kernels::Span;

const std::string kRobustness = std::string(PPSPEC_SOURCE_DIR) + "/tests/robustness/";

TEST(Bounds, SpanChecksEveryIndexAndSubrange) {
  std::vector<int32_t> v{1, 2, 3, 4};
  const Span<int32_t> s(v);
  EXPECT_EQ(s[3], 4);
  EXPECT_EQ(s.sub(1, 3)[2], 4);
  EXPECT_THROW((void)s[4], KernelOutOfBounds);
  EXPECT_THROW((void)s[-1], KernelOutOfBounds);
  EXPECT_THROW((void)s.sub(2, 3), KernelOutOfBounds);
  EXPECT_THROW((void)s.sub(1, 2)[2], KernelOutOfBounds) << "a sub-span is bounded by its own size";
}

// prepare_inputs of a 3-token prefill row over prompt rows of `max_prompt` tokens.
struct PrefillRow {
  std::vector<int32_t> qs{0, 3}, idx{1}, num_computed{0, 0}, prefill_len{0, 3}, prompt,
      table = std::vector<int32_t>(2 * 4, 1);
  std::vector<int64_t> last_sampled{0, 0}, drafts{0, 0};
  std::vector<int32_t> ids = std::vector<int32_t>(4, -1), row_req = std::vector<int32_t>(4, -9);
  std::vector<int64_t> pos = std::vector<int64_t>(4, -1), slots = std::vector<int64_t>(4, -9);
  std::vector<uint8_t> pad = std::vector<uint8_t>(4, 0);
  int32_t max_prompt;
  explicit PrefillRow(int32_t m) : prompt(static_cast<size_t>(2 * m), 7), max_prompt(m) {}
  kernels::PrepareInputsKernel kernel() {
    const Span<bool> is_padding(reinterpret_cast<bool*>(pad.data()), 4);
    return kernels::PrepareInputsKernel{
        1,     3, qs, idx,  num_computed, prefill_len, prompt, max_prompt, last_sampled, drafts, 1,
        table, 4, 16, true, ids,          pos,         slots,  is_padding, row_req,      4};
  }
};

// prepare_inputs of a prefill row whose positions run past the request's prompt row: the read
// that used to overflow into the next request's row (or past the buffer) is caught.
TEST(Bounds, PrepareInputsReadingPastThePromptRowThrows) {
  PrefillRow narrow(2), wide(3);
  EXPECT_THROW(kernels::run_on_cpu(narrow.kernel(), 2), KernelOutOfBounds) << "a 3-token prompt in rows of 2";
  EXPECT_NO_THROW(kernels::run_on_cpu(wide.kernel(), 2));
  EXPECT_EQ(wide.ids, (std::vector<int32_t>{7, 7, 7, 0}));
}

TEST(Bounds, BufferSlicesAndRowsOutsideTheBufferAreInternalErrors) {
  std::vector<int32_t> memory(2 * 4);
  const core::Buffer b(memory.data(), nullptr, core::Dtype::i32, core::Shape{2, 4});
  EXPECT_NO_THROW((void)b.slice(1, 2, 2));
  EXPECT_THROW((void)b.slice(1, 3, 2), core::InternalError) << "the block-table upload that overflowed";
  EXPECT_THROW((void)b.slice(2, 0, 1), core::InternalError);
  EXPECT_THROW((void)b.rows(1, 2), core::InternalError);
}

serving::ServingScenario reproducer(const std::string& name) {
  return scenario::read_serving(scenario::parse_toml_file(kRobustness + name), kRobustness + name);
}

// The two fault-free scenarios whose warmup overflowed the block table and the prompt rows now
// run cleanly: any out-of-bounds access would throw out of the run (and ASan would report it).
TEST(Bounds, WarmupOfTinyScenariosStaysInsideItsBuffers) {
  for (const char* name : {"asan_block_table_upload_overflow.toml", "asan_prepare_inputs_overflow.toml"}) {
    const serving::ServingScenario s = reproducer(name);
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      sim::RunConfig opts;
      opts.seed = seed;
      serving::ServingRun run;
      ASSERT_NO_THROW(run = serving::run_on_sim(s, opts)) << name;
      EXPECT_EQ(run.result.verdict, core::Verdict::pass) << name;
    }
  }
}

// Warmup's synthetic requests obey the workload's limits; one that reaches its max tokens
// finishes and is replaced, so every warmup step still has requests to run.
TEST(Bounds, WarmupDummiesObeyTheWorkloadLimitsAndAreReplaced) {
  serving::ServingScenario s = reproducer("asan_block_table_upload_overflow.toml");
  const engine::EngineConfig& c = s.config;
  EXPECT_EQ(c.warmup_prompt_len(), 2) << "prompt_max = 2";
  EXPECT_EQ(c.warmup_max_tokens(), 3) << "output_max = 3";
  engine::Scheduler sched(c, {});
  sched.add_dummies(2, c.warmup_prompt_len(), c.warmup_max_tokens());
  int replaced = 0;
  for (int64_t step = 0; step < c.serving.warmup_steps; ++step) {
    if (!sched.dummies_live()) {
      sched.add_dummies(2, c.warmup_prompt_len(), c.warmup_max_tokens());
      ++replaced;
    }
    const auto so = sched.schedule(step);
    ASSERT_TRUE(so) << "step " << step;
    ASSERT_FALSE(so->requests.empty()) << "step " << step;
    engine::ModelOutput out;
    out.step = step;
    for (const auto& r : so->requests) {
      EXPECT_LE(r.num_computed + r.num_tokens, c.workload.prompt_max + c.workload.output_max + c.spec.k + 1);
      EXPECT_LE(r.first_new_block + static_cast<int32_t>(r.new_blocks.size()), c.max_blocks_per_req());
      engine::RowOutput row;
      row.idx = r.idx;
      row.id = r.id;
      row.num_sampled = r.produces_sample() ? 1 : 0;
      row.num_rejected = r.decode() ? r.num_tokens - 1 : 0;  // every draft rejected
      if (r.produces_sample()) row.tokens = {5};
      out.rows.push_back(row);
    }
    sched.update(*so, out);
  }
  EXPECT_GT(replaced, 0) << "dummies of at most 3 tokens finish within 64 warmup steps";
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

// The process's peak resident memory: meaningful per test because ctest runs each test in a
// process of its own (gtest_discover_tests).
long peak_rss_mb() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// Program scenarios never read their buffers back: they are modelled by size, so the largest
// operations the loader accepts cost no memory (32 GiB here if they were backed, twice with shadows).
TEST(Memory, ProgramBuffersAreModelledBySize) {
  const core::RunResult r = run_toml(R"(kind = "program"
ranks = 2
[[communicator]]
name = "w"
ranks = [0, 1]
[rank.0]
ops = [ { op = "all_reduce", comm = "w", dtype = "f64", count = 4294967296 }, { op = "malloc", bytes = 2147483648 },
        { op = "send", comm = "w", peer = 1, dtype = "f64", count = 4294967296 }, { op = "stream_sync", stream = "main" } ]
[rank.1]
ops = [ { op = "all_reduce", comm = "w", dtype = "f64", count = 4294967296 },
        { op = "recv", comm = "w", peer = 0, dtype = "f64", count = 4294967296 }, { op = "stream_sync", stream = "main" } ]
[expect]
verdict = "pass"
)");
  EXPECT_EQ(r.verdict, core::Verdict::pass);
  EXPECT_LT(peak_rss_mb(), 1024) << "MiB at peak";
}

// Serving buffers hold data (tokens are read back) and count against a budget: a scenario that
// cannot fit is refused before it runs, with exit 2, instead of dying of bad_alloc.
TEST(Memory, AServingScenarioBeyondTheBudgetIsRefusedBeforeItRuns) {
  const std::string text = R"(kind = "serving"
[serving]
max_num_seqs = 4096
[runtime]
memory_budget_mb = BUDGET
[expect]
verdict = "pass"
)";
  const auto path = scratch_path("ppspec_memory_budget.toml");
  std::ofstream(path) << replaced(text, "BUDGET", "1");
  std::ostringstream out, err;
  EXPECT_EQ(tools::run_command({.files = {path.string()}}, out, err), 2);
  EXPECT_NE(err.str().find("more than its budget of 1 MiB ([runtime] memory_budget_mb)"), std::string::npos)
      << err.str();
  EXPECT_TRUE(out.str().empty()) << out.str();
  std::ofstream(path) << replaced(text, "BUDGET", "8192");
  std::ostringstream out2, err2;
  EXPECT_EQ(tools::run_command({.files = {path.string()}}, out2, err2), 0) << out2.str() << err2.str();
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

// A host that posts without ever synchronising waits for room in the stream's launch queue (as
// a CUDA launch blocks when the device's command queue is full): memory stays bounded.
TEST(Memory, AHostThatNeverSynchronisesWaitsForRoomInTheLaunchQueue) {
  const core::RunResult r = run_toml(R"(kind = "program"
ranks = 2
[[communicator]]
name = "w"
ranks = [0, 1]
[rank.0]
repeat = 100000
ops = [ { op = "send", comm = "w", peer = 1, label = "x" }, { op = "all_reduce", comm = "w", label = "r" } ]
[rank.1]
repeat = 100000
ops = [ { op = "recv", comm = "w", peer = 0, label = "x" }, { op = "all_reduce", comm = "w", label = "r" } ]
[expect]
verdict = "pass"
)");
  EXPECT_EQ(r.verdict, core::Verdict::pass);
#if defined(PPSPEC_ASAN_ACTIVE)
  const long bound_mb = 600;  // ASan's shadow and its 256 MiB quarantine of freed blocks come on top
#else
  const long bound_mb = 200;
#endif
  EXPECT_LT(peak_rss_mb(), bound_mb) << "MiB at peak (unbounded queues held ~230 MiB per 100,000 iterations)";
}

// Both ways: the full queue is a real wait. Behind a persistent kernel, the 1,025th launch blocks
// the thread that would have set the kernel's flag: a hang on hardware, a deadlock here.
TEST(Memory, AFullLaunchQueueBehindASpinningKernelDeadlocks) {
  std::string launches;
  for (int i = 0; i < 1030; ++i) launches += "  { op = \"launch\", kernel = \"k\", stream = \"main\" },\n";
  const std::string text =
      "kind = \"program\"\nranks = 1\nstreams = [\"main\", \"side\"]\n"
      "[runtime]\nmodule_loading = \"eager\"\n[rank.0]\nops = [\n"
      "  { op = \"wait_flag\", flag = \"go\", stream = \"main\" },\n" +
      launches + "  { op = \"set_flag\", flag = \"go\", stream = \"side\" },\n]\n[expect]\nverdict = \"deadlock\"\n";
  core::RunResult r = run_toml(text);
  ASSERT_EQ(r.verdict, core::Verdict::deadlock);
  EXPECT_NE(all_text(r.findings.front()).find("launch queue is full (1024 pending items"), std::string::npos)
      << all_text(r.findings.front());
  r = run_toml(replaced(text, "  { op = \"wait_flag\", flag = \"go\", stream = \"main\" },\n", ""));
  EXPECT_EQ(r.verdict, core::Verdict::pass) << "without the spinning kernel the queue drains";
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

// A kernel that reads past its buffer (prepare_inputs of a 3-token prompt in rows of 2, as the
// test above): on a GPU an illegal memory access; on the simulator the same verdict, naming the
// rank, kernel, engine step, row and index, never an internal error of ppspec.
TEST(Bounds, AKernelIndexingPastItsBufferIsADeviceFaultNotAnInternalError) {
  PrefillRow narrow(2);
  const kernels::PrepareInputsKernel k = narrow.kernel();
  Harness h(1);
  h.actor(0, [&] {
    core::Device& dev = h.rt.device(0);
    const core::Stream s = dev.stream("main");
    h.rt.set_call_site("test.toml:7", 12);
    engine::launch_kernel(dev, s, core::KernelRef{"prepare_inputs", "v1"}, k, 2);
    dev.stream_sync(s);
  });
  const core::RunResult r = h.run();
  ASSERT_EQ(r.verdict, core::Verdict::device_fault);
  const core::Finding& f = r.findings.at(0);
  EXPECT_EQ(core::to_string(f.kind), "device-fault");
  EXPECT_EQ(f.engine_step, 12);
  EXPECT_NE(f.summary.find("rank0 kernel prepare_inputs[v1] on rank0.main at engine step 12: index"), std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("index 2 outside [0, 2) (row 0)"), std::string::npos) << f.summary;
  EXPECT_EQ(f.sites.at(0).origin, "test.toml:7");
}

}  // namespace
}  // namespace ppspec::testing
