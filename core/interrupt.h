// Ctrl-C during a long command (`ppspec run --seeds N`, `ppspec fuzz`): the first SIGINT asks the
// command to stop at its next boundary (a seed, a case) and print and write its summary so far; a
// second one ends the process as a shell expects.
#pragma once

namespace ppspec::core {

// The exit status of a command stopped by Ctrl-C: 128 + SIGINT, as a shell reports it.
inline constexpr int kExitInterrupted = 130;

// The signal a command that started worker processes sends each of them when it is interrupted:
// not SIGINT, which a worker in the terminal's process group may have had already (Ctrl-C reaches
// the whole group), and whose second delivery ends a process at once.
inline constexpr int kStopWorkerSignal = 10;  // SIGUSR1 on Linux

// While one lives, SIGINT sets the flag interrupted() reads (once: the handler resets itself, so a
// second Ctrl-C is the default one), and so does kStopWorkerSignal where `stop_worker` (any number
// of times: it only asks); its end restores what was there before.
class InterruptScope {
 public:
  explicit InterruptScope(bool stop_worker = false);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

bool interrupted();

}  // namespace ppspec::core
