// `ppspec gpu-latency`: NCCL send/recv round trips between GPU 0 and GPU 1 through the real
// backend (the same binary and code path as `run --backend gpu`, op tracking included).
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <vector>

#include "real_backend/real_runtime.h"
#include "runs/gpu_jobs/gpu_latency.h"

namespace ppspec::gpu_jobs {

int gpu_latency_main(int iterations, int64_t bytes) {
  try {
    real::RealConfig cfg;
    cfg.hang_timeout = 30 * core::kSec;
    real::RealRuntime rt(2, cfg);
    const std::vector<core::RankId> members{0, 1};
    rt.declare_comm("pingpong", members);
    std::vector<double> rtt_us;
    rtt_us.reserve(static_cast<size_t>(iterations));
    core::Buffer buf[2];
    for (int r = 0; r < 2; ++r) buf[r] = rt.device(r).alloc(core::Dtype::u8, core::Shape{bytes, 1}, "pingpong");
    for (int r = 0; r < 2; ++r) {
      rt.spawn(core::ActorSpec{fmt::format("rank{}.host", r), r}, [&, r] {
        core::Communicator& c = rt.comm_init("pingpong", r);
        core::Device& d = rt.device(r);
        const core::Stream s = d.stream("main");
        const int warmup = 20;
        for (int i = 0; i < iterations + warmup; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          if (r == 0) {
            c.send(buf[r], 1, s, core::Label{"ping"});
            c.recv(buf[r], 1, s, core::Label{"pong"});
          } else {
            c.recv(buf[r], 0, s, core::Label{"ping"});
            c.send(buf[r], 0, s, core::Label{"pong"});
          }
          d.stream_sync(s);
          if (r == 0 && i >= warmup)
            rtt_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
      });
    }
    (void)rt.run();
    std::sort(rtt_us.begin(), rtt_us.end());
    auto at = [&](double q) { return rtt_us[static_cast<size_t>(q * static_cast<double>(rtt_us.size() - 1))]; };
    std::cout << fmt::format(
        "NCCL send/recv round trip, {} bytes, GPU0 <-> GPU1, {} iterations: median {:.1f} us, "
        "p10 {:.1f} us, p90 {:.1f} us, p99 {:.1f} us\n",
        bytes, iterations, at(0.5), at(0.1), at(0.9), at(0.99));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ppspec: " << e.what() << '\n';
    return 2;
  }
}

}  // namespace ppspec::gpu_jobs
