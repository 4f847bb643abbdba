// Ctrl-C during a long command (`ppspec run --seeds N`, `ppspec fuzz`): the first SIGINT asks the
// command to stop at its next boundary (a seed, a case) and print and write its summary so far; a
// second one ends the process as a shell expects.
#pragma once

namespace ppspec::core {

// The exit status of a command stopped by Ctrl-C: 128 + SIGINT, as a shell reports it.
inline constexpr int kExitInterrupted = 130;

// While one lives, SIGINT sets the flag interrupted() reads (once: the handler resets itself, so a
// second Ctrl-C is the default one); its end restores what was there before.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

bool interrupted();

}  // namespace ppspec::core
