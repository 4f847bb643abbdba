// Communicator::all_to_all on real GPUs (ctest label `gpu`): the real backend's
// grouped ncclSend/ncclRecv to every member moves chunk j of rank i's send
// buffer into chunk i of rank j's receive buffer, as the simulator does
// (tests/all_to_all_test.cc). One member is a copy; the two-rank test skips on
// fewer GPUs.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "real_backend/real_runtime.h"

namespace ppspec::testing {
namespace {

int a2a_gpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

float a2a_gpu_value(int r, int j, int64_t e) { return static_cast<float>(1000 * r + 100 * j + e); }

// Each rank fills its send buffer, exchanges it with all_to_all on a
// communicator of all ranks and reads its receive buffer back through pinned
// memory; returns every rank's receive buffer.
std::vector<std::vector<float>> a2a_on_gpus(int ranks, int64_t chunk) {
  real::RealConfig cfg;
  cfg.hang_timeout = 20 * core::kSec;
  cfg.on_hang = [](const std::vector<core::Event>&) { std::fprintf(stderr, "all_to_all hung on the GPUs\n"); };
  cfg.on_error = [](const std::string& e) { std::fprintf(stderr, "all_to_all failed: %s\n", e.c_str()); };
  real::RealRuntime rt(ranks, cfg);
  std::vector<core::RankId> members;
  for (int r = 0; r < ranks; ++r) members.push_back(r);
  rt.declare_comm("ep", members);
  std::vector<std::vector<float>> got(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    rt.spawn(core::ActorSpec{"rank" + std::to_string(r) + ".host", r}, [&rt, &got, r, ranks, chunk] {
      core::Device& d = rt.device(r);
      const core::Shape shape{chunk * ranks, 1};
      const core::Buffer send = d.alloc(core::Dtype::f32, shape, "send");
      const core::Buffer recv = d.alloc(core::Dtype::f32, shape, "recv");
      const core::Buffer pinned = d.alloc_host(core::Dtype::f32, shape, "pinned");
      core::Communicator& c = rt.comm_init("ep", r);
      const core::Stream s = d.stream("main");
      auto in = d.host_write<float>(pinned);
      for (int j = 0; j < ranks; ++j)
        for (int64_t e = 0; e < chunk; ++e) in[static_cast<size_t>(j * chunk + e)] = a2a_gpu_value(r, j, e);
      d.copy_to_device(s, send, pinned);
      d.stream_sync(s);  // the pinned buffer is rewritten below only after the upload ran
      for (float& x : d.host_write<float>(pinned)) x = -1;
      d.copy_to_device(s, recv, pinned);
      c.all_to_all(send, recv, s, core::Label{"dispatch"});
      d.copy_to_host(s, pinned, recv);
      d.stream_sync(s);
      auto out = d.host_read<float>(pinned);
      got[static_cast<size_t>(r)].assign(out.begin(), out.end());
    });
  (void)rt.run();
  return got;
}

void expect_a2a_exchanged(int ranks, int64_t chunk) {
  const auto got = a2a_on_gpus(ranks, chunk);
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(got[static_cast<size_t>(r)].size(), static_cast<size_t>(chunk * ranks));
    for (int i = 0; i < ranks; ++i)
      for (int64_t e = 0; e < chunk; ++e)
        EXPECT_EQ(got[static_cast<size_t>(r)][static_cast<size_t>(i * chunk + e)], a2a_gpu_value(i, r, e))
            << "rank" << r << " chunk " << i << " elem " << e;
  }
}

TEST(GpuAllToAll, OneGpu_AOneMemberCommunicatorCopiesSendIntoRecv) {
  if (a2a_gpus() < 1) GTEST_SKIP() << "no GPU";
  expect_a2a_exchanged(1, 1000);
}

TEST(GpuAllToAll, TwoGpus_ChunksLandInRankOrder) {
  if (a2a_gpus() < 2) GTEST_SKIP() << "needs 2 GPUs; this machine has " << a2a_gpus();
  expect_a2a_exchanged(2, 1000);
}

}  // namespace
}  // namespace ppspec::testing
