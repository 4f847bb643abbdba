// Where one rank's records go: its trace file (always: `ppspec check` reads it after the job) and,
// when PPSPEC_WATCH names an address, a TCP connection to `ppspec watch`, which gets the same
// lines as they are written. Used by the flusher thread only, never by NCCL's threads.
#pragma once

#include <cstdio>
#include <string>

namespace ppspec::nccl_profiler {

// "host:port" or "tcp://host:port" (an address); anything else is a folder.
bool is_watch_address(const std::string& watch);

class Output {
 public:
  // Opens DIR/rankN.HOST.PID.jsonl and, for a non-empty `address`, connects to the watcher; a
  // watcher that cannot be reached leaves the file alone, saying so once on stderr. nullptr (with
  // `error` set) when the file cannot be made.
  static Output* open(const std::string& dir, int global_rank, bool harness_clock, bool completions,
                      const std::string& address, std::string& error);
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  int rank() const { return rank_; }
  std::string& buffer() { return buffer_; }
  // Writes the buffer to the file and the watcher, and empties it.
  void write_buffer();
  // Whether the watcher asked the job to stop (`ppspec watch --abort`): a line "abort" on the
  // socket, or a file `ppspec-abort` in a watched folder.
  bool abort_requested();
  void close(const std::string& trailer);

 private:
  Output() = default;
  void connect(const std::string& address);
  void drop_link(const char* why);

  int rank_ = -1;
  FILE* file_ = nullptr;
  int socket_ = -1;
  std::string path_, address_, abort_file_, buffer_;
};

}  // namespace ppspec::nccl_profiler
