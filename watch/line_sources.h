// Where `ppspec watch` reads the ranks' lines from, as they are written:
// * a folder the plugins write their traces into (PPSPEC_WATCH=/shared/folder; a filesystem
//   shared by the nodes carries it across them): every plugin trace in it, new ones included,
//   followed as it grows;
// * an address the watcher listens on (PPSPEC_WATCH=host:port): one connection per rank.
// Both hand complete lines to a Watcher; a partial line waits for its end. Both can ask the job to
// stop (`--abort`): a file `ppspec-abort` in the folder, a line "abort" on every connection.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "watch/watcher.h"

namespace ppspec::watch {

inline constexpr size_t kLineBytesMax = size_t{1} << 16;  // a longer "line" is not the plugin's: dropped

class LineInbox {
 public:
  virtual ~LineInbox() = default;
  // Reads what arrived, waiting at most `wait_ms` for it, and hands every complete line to `w`.
  virtual void poll(Watcher& w, int wait_ms) = 0;
  virtual void request_abort() = 0;
  virtual std::string describe() const = 0;
};

class FolderInbox final : public LineInbox {
 public:
  // Throws core::InputError when `dir` is not a folder that can be read.
  explicit FolderInbox(std::string dir);
  void poll(Watcher& w, int wait_ms) override;
  void request_abort() override;
  std::string describe() const override { return "the folder " + dir_; }

 private:
  struct File {
    size_t source = 0;
    uint64_t offset = 0;
    std::string partial;
    bool oversized = false;  // inside a line longer than kLineBytesMax: skipped to its end
  };
  static constexpr size_t kReadBytes = size_t{1} << 16;           // a file's turn
  static constexpr size_t kPollBytes = size_t{16} << 20;          // a poll's, over every file
  size_t read_new(Watcher& w, const std::string& path, File& f);  // one turn; the bytes it read
  std::string dir_;
  std::map<std::string, File> files_;  // by path
};

class SocketInbox final : public LineInbox {
 public:
  // Listens on "host:port" (port 0: any free one). Throws core::InputError when it cannot.
  explicit SocketInbox(const std::string& address);
  ~SocketInbox() override;
  void poll(Watcher& w, int wait_ms) override;
  void request_abort() override;
  std::string describe() const override;
  int port() const { return port_; }

 private:
  struct Client {
    int fd = -1;
    size_t source = 0;
    std::string partial;
    bool oversized = false;  // inside a line longer than kLineBytesMax: skipped to its end
  };
  void accept_clients(Watcher& w);
  bool read_client(Watcher& w, Client& c);  // false: the connection closed
  int listen_fd_ = -1;
  int port_ = 0;
  std::string host_;
  std::vector<Client> clients_;
  uint64_t accepted_ = 0;
};

}  // namespace ppspec::watch
