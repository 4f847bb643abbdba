#include "watch/line_sources.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <thread>

#include "core/error.h"

namespace ppspec::watch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHeaderStart = "{\"ppspec_nccl_profiler\":";

// Hands the complete lines of `chunk` to the watcher, keeping an unfinished one in `partial`.
void split_lines(Watcher& w, size_t source, std::string& partial, bool& oversized, const char* chunk, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const char c = chunk[i];
    if (c == '\n') {
      if (!oversized) w.add_line(source, partial);
      partial.clear();
      oversized = false;
      continue;
    }
    if (oversized) continue;
    partial += c;
    if (partial.size() > kLineBytesMax) {
      w.add_line(source, partial);  // not the plugin's: dropped and counted
      partial.clear();
      oversized = true;
    }
  }
}

bool is_plugin_trace(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char head[32] = {};
  in.read(head, static_cast<std::streamsize>(std::strlen(kHeaderStart)));
  return in.gcount() == static_cast<std::streamsize>(std::strlen(kHeaderStart)) &&
         std::memcmp(head, kHeaderStart, std::strlen(kHeaderStart)) == 0;
}

}  // namespace

FolderInbox::FolderInbox(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec))
    throw core::InputError(dir_, 0, "not a folder: --dir names the folder PPSPEC_WATCH names to the job");
}

size_t FolderInbox::read_new(Watcher& w, const std::string& path, File& f) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(f.offset));
  char buf[kReadBytes];
  in.read(buf, sizeof buf);
  const auto n = static_cast<size_t>(in.gcount());
  f.offset += n;
  if (n > 0) split_lines(w, f.source, f.partial, f.oversized, buf, n);
  return n;
}

void FolderInbox::poll(Watcher& w, int wait_ms) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec))
    if (entry.is_regular_file(ec) && entry.path().extension() == ".jsonl") found.push_back(entry.path().string());
  std::sort(found.begin(), found.end());  // a fixed order, whatever the folder's
  const uint64_t before = w.progress() + w.dropped_lines();
  std::vector<std::pair<const std::string*, File*>> open;
  for (const std::string& path : found) {
    auto it = files_.find(path);
    if (it == files_.end()) {
      if (!is_plugin_trace(path)) continue;  // not (yet) a plugin's: looked at again next time
      it = files_.emplace(path, File{w.add_source(path), 0, {}, false}).first;
    }
    open.emplace_back(&it->first, &it->second);
  }
  // The files in turn, a block each, as a live job's ranks write them: a trace written long ago is
  // read with its ranks side by side, so what waits for a member's post (a collective's slot) waits
  // a block, not the whole file. A poll reads kPollBytes at most, then lets the caller look up.
  size_t read = 0;
  for (bool more = true; more && read < kPollBytes;) {
    more = false;
    for (const auto& [path, file] : open) {
      const size_t n = read_new(w, *path, *file);
      read += n;
      more = more || n > 0;
    }
  }
  if (w.progress() + w.dropped_lines() == before) std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
}

void FolderInbox::request_abort() { std::ofstream(fs::path(dir_) / "ppspec-abort") << "ppspec watch --abort\n"; }

SocketInbox::SocketInbox(const std::string& address) {
  const std::string a = address.rfind("tcp://", 0) == 0 ? address.substr(6) : address;
  const size_t colon = a.rfind(':');
  if (colon == std::string::npos)
    throw core::InputError(address, 0, "--listen takes HOST:PORT (PORT 0: any free port)");
  host_ = a.substr(0, colon);
  const std::string port = a.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host_.empty() ? nullptr : host_.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr)
    throw core::InputError(address, 0, "cannot resolve the address to listen on");
  listen_fd_ = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  const int one = 1;
  if (listen_fd_ >= 0) ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool ok =
      listen_fd_ >= 0 && ::bind(listen_fd_, found->ai_addr, found->ai_addrlen) == 0 && ::listen(listen_fd_, 1024) == 0;
  ::freeaddrinfo(found);
  if (!ok) throw core::InputError(address, 0, fmt::format("cannot listen there: {}", std::strerror(errno)));
  ::fcntl(listen_fd_, F_SETFL, ::fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  char service[16] = {};
  ::getnameinfo(reinterpret_cast<sockaddr*>(&bound), len, nullptr, 0, service, sizeof service, NI_NUMERICSERV);
  port_ = std::atoi(service);
}

SocketInbox::~SocketInbox() {
  for (const Client& c : clients_) ::close(c.fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::string SocketInbox::describe() const { return fmt::format("{}:{}", host_.empty() ? "*" : host_, port_); }

void SocketInbox::accept_clients(Watcher& w) {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    clients_.push_back(
        Client{fd, w.add_source(fmt::format("connection {} to {}", ++accepted_, describe())), {}, false});
  }
}

bool SocketInbox::read_client(Watcher& w, Client& c) {
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      split_lines(w, c.source, c.partial, c.oversized, buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    return false;  // closed: a rank ended (its trailer came first) or died
  }
}

void SocketInbox::poll(Watcher& w, int wait_ms) {
  std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
  for (const Client& c : clients_) fds.push_back({c.fd, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), wait_ms) <= 0) return;
  std::vector<Client> open;
  for (size_t i = 0; i < clients_.size(); ++i) {
    Client& c = clients_[i];
    if (fds[i + 1].revents == 0 || read_client(w, c)) {
      open.push_back(std::move(c));
      continue;
    }
    ::close(c.fd);
  }
  clients_ = std::move(open);
  if (fds[0].revents != 0) accept_clients(w);  // after the reads: `fds` names the clients polled
}

void SocketInbox::request_abort() {
  for (const Client& c : clients_) (void)::send(c.fd, "abort\n", 6, MSG_NOSIGNAL);
}

}  // namespace ppspec::watch
