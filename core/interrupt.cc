#include "core/interrupt.h"

#include <atomic>
#include <csignal>
#include <pthread.h>

namespace ppspec::core {
namespace {

// Async-signal-safe: the handler only stores to a lock-free atomic.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);
struct sigaction g_before {};
struct sigaction g_stop_before {};
bool g_stop_installed = false;
static_assert(kStopWorkerSignal == SIGUSR1);

// SIGINT, and a worker's stop request: both ask the command to stop at its next boundary.
extern "C" void on_stop_request(int) { g_interrupted.store(true, std::memory_order_relaxed); }

}  // namespace

InterruptScope::InterruptScope(bool stop_worker) {
  g_interrupted.store(false);
  g_stop_installed = stop_worker;
  if (stop_worker) {
    struct sigaction stop {};
    stop.sa_handler = on_stop_request;
    stop.sa_flags = SA_RESTART;
    sigemptyset(&stop.sa_mask);
    sigaction(kStopWorkerSignal, &stop, &g_stop_before);
    sigset_t stop_set;  // a worker starts with it blocked (a stop asked before now is delivered here)
    sigemptyset(&stop_set);
    sigaddset(&stop_set, kStopWorkerSignal);
    pthread_sigmask(SIG_UNBLOCK, &stop_set, nullptr);
  }
  sigaction(SIGINT, nullptr, &g_before);
  // A process started with SIGINT ignored (nohup, `cmd &` in a script) keeps it ignored.
  if (g_before.sa_handler == SIG_IGN) return;
  struct sigaction sa {};
  sa.sa_handler = on_stop_request;
  sa.sa_flags = SA_RESETHAND | SA_RESTART;  // the second Ctrl-C: the default action; waits go on
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &g_before, nullptr);
  if (g_stop_installed) sigaction(kStopWorkerSignal, &g_stop_before, nullptr);
}

bool interrupted() { return g_interrupted.load(std::memory_order_relaxed); }

}  // namespace ppspec::core
