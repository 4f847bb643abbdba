#include "watch/nccl_profiler/output.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "watch/nccl_profiler/trace_lines.h"

namespace ppspec::nccl_profiler {
namespace {

constexpr int kConnectTimeoutMs = 2000;
constexpr int kSendTimeoutMs = 2000;  // a watcher that stops reading must not stop the flusher for longer

std::string without_scheme(const std::string& a) { return a.rfind("tcp://", 0) == 0 ? a.substr(6) : a; }

// host and port of "host:port" ("[v6]:port" too); false when it is not of that shape.
bool split_address(const std::string& address, std::string& host, std::string& port) {
  const std::string a = without_scheme(address);
  const size_t colon = a.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == a.size()) return false;
  host = a.substr(0, colon);
  port = a.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  for (char c : port)
    if (c < '0' || c > '9') return false;
  return host.find('/') == std::string::npos;
}

// A connected socket, or -1; waits at most kConnectTimeoutMs for each address the name resolves to.
int connect_to(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int soerr = 0;
      socklen_t len = sizeof soerr;
      rc = ::poll(&p, 1, kConnectTimeoutMs) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 &&
                   soerr == 0
               ? 0
               : -1;
    }
    if (rc != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return -1;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // blocking sends, bounded by SO_SNDTIMEO
  timeval tv{kSendTimeoutMs / 1000, (kSendTimeoutMs % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

}  // namespace

bool is_watch_address(const std::string& watch) {
  std::string host, port;
  return watch.rfind("tcp://", 0) == 0 || (watch.find('/') == std::string::npos && split_address(watch, host, port));
}

Output* Output::open(const std::string& dir, int global_rank, bool harness_clock, bool completions,
                     const std::string& address, std::string& error) {
  char host[128] = {};
  ::gethostname(host, sizeof host - 1);
  auto* o = new Output();
  o->rank_ = global_rank;
  o->path_ = dir + "/" + trace_file_name(global_rank, host, ::getpid());
  o->abort_file_ = dir + "/ppspec-abort";
  o->file_ = std::fopen(o->path_.c_str(), "w");
  if (o->file_ == nullptr) {
    error = "cannot open " + o->path_ + ": " + std::strerror(errno);
    delete o;
    return nullptr;
  }
  o->buffer_ = header_line(global_rank, host, ::getpid(), harness_clock, completions);
  if (!address.empty()) o->connect(address);
  return o;
}

Output::~Output() {
  if (file_ != nullptr) std::fclose(file_);
  if (socket_ >= 0) ::close(socket_);
}

void Output::connect(const std::string& address) {
  address_ = address;
  std::string host, port;
  if (!split_address(address, host, port)) {
    std::fprintf(stderr, "ppspec-nccl-profiler: PPSPEC_WATCH='%s' is not HOST:PORT: recording in %s only\n",
                 address.c_str(), path_.c_str());
    return;
  }
  socket_ = connect_to(host, port);
  if (socket_ < 0)
    std::fprintf(stderr, "ppspec-nccl-profiler: cannot reach the watcher at %s: recording in %s only\n",
                 address.c_str(), path_.c_str());
}

void Output::drop_link(const char* why) {
  std::fprintf(stderr, "ppspec-nccl-profiler: lost the watcher at %s (%s): recording in %s only\n", address_.c_str(),
               why, path_.c_str());
  ::close(socket_);
  socket_ = -1;
}

void Output::write_buffer() {
  if (buffer_.empty()) return;
  std::fwrite(buffer_.data(), 1, buffer_.size(), file_);
  std::fflush(file_);
  for (size_t sent = 0; socket_ >= 0 && sent < buffer_.size();) {
    const ssize_t n = ::send(socket_, buffer_.data() + sent, buffer_.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      drop_link(n == 0 ? "closed" : std::strerror(errno));
      break;
    }
    sent += static_cast<size_t>(n);
  }
  buffer_.clear();
}

bool Output::abort_requested() {
  if (::access(abort_file_.c_str(), F_OK) == 0) return true;
  if (socket_ < 0) return false;
  char line[64];
  const ssize_t n = ::recv(socket_, line, sizeof line - 1, MSG_DONTWAIT);
  if (n == 0) {
    drop_link("closed");
    return false;
  }
  if (n < 0) return false;  // nothing to read (EAGAIN) or an error the next send reports
  line[n] = '\0';
  return std::strstr(line, "abort") != nullptr;
}

void Output::close(const std::string& trailer) {
  buffer_ += trailer;
  write_buffer();
}

}  // namespace ppspec::nccl_profiler
