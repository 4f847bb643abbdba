// The ppspec binary in a child process, as a user runs it: its command line parsed by the real
// main, stdout and stderr captured together, and its exit status.
#pragma once

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace ppspec::testing {

struct Ran {
  int code;            // the exit status; -1 when it did not exit (a signal)
  std::string output;  // stdout and stderr
};

// `prefix` runs in the same shell first (`cd DIR &&`, `ulimit -v N;`, `VAR=value`).
inline Ran run_ppspec(const std::string& args, const std::string& prefix = "") {
  const std::string command = prefix + " " + PPSPEC_BINARY + " " + args + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace ppspec::testing
