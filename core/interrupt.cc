#include "core/interrupt.h"

#include <atomic>
#include <csignal>

namespace ppspec::core {
namespace {

// Async-signal-safe: the handler only stores to a lock-free atomic.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);
struct sigaction g_before {};

extern "C" void on_sigint(int) { g_interrupted.store(true, std::memory_order_relaxed); }

}  // namespace

InterruptScope::InterruptScope() {
  g_interrupted.store(false);
  sigaction(SIGINT, nullptr, &g_before);
  // A process started with SIGINT ignored (nohup, `cmd &` in a script) keeps it ignored.
  if (g_before.sa_handler == SIG_IGN) return;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND | SA_RESTART;  // the second Ctrl-C: the default action; waits go on
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

InterruptScope::~InterruptScope() { sigaction(SIGINT, &g_before, nullptr); }

bool interrupted() { return g_interrupted.load(std::memory_order_relaxed); }

}  // namespace ppspec::core
