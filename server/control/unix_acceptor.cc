// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/unix_acceptor.h"

#include <fcntl.h>
#include <grpcpp/server_posix.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace skbnf::control {
namespace {

// socket + bind + listen; the path socket born 0660.
absl::StatusOr<int> Listen(const Listener& l) {
  sockaddr_un sa = {};
  sa.sun_family = AF_UNIX;
  socklen_t len = 0;
  if (l.kind == Listener::Kind::kUnixPath) {
    std::memcpy(sa.sun_path, l.unix_path.c_str(), l.unix_path.size() + 1);
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + l.unix_path.size() + 1);
  } else {
    sa.sun_path[0] = '\0';  // abstract: a leading NUL, no terminator
    std::memcpy(sa.sun_path + 1, l.unix_path.data(), l.unix_path.size());
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + l.unix_path.size());
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("--listen: '", l.address, "': socket: ", std::strerror(errno)));
  }
  const mode_t old = ::umask(0117);  // 0777 & ~0117 = 0660: owner and group only
  const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), len);
  const int bind_errno = errno;
  ::umask(old);
  if (rc != 0 || ::listen(fd, 128) != 0) {
    const int e = rc != 0 ? bind_errno : errno;
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("--listen: cannot listen on '", l.address, "': ", std::strerror(e)));
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UnixAcceptor>> UnixAcceptor::Bind(const std::vector<Listener>& ls,
                                                                 UnixPeers& peers,
                                                                 int max_connections) {
  std::unique_ptr<UnixAcceptor> a(new UnixAcceptor(peers, max_connections));
  for (const Listener& l : ls) {
    if (l.kind == Listener::Kind::kTcp) continue;
    absl::StatusOr<int> fd = Listen(l);
    if (!fd.ok()) return fd.status();  // ~UnixAcceptor closes and removes the ones made
    Socket s;
    s.fd = *fd;
    s.path_socket = l.kind == Listener::Kind::kUnixPath;
    if (s.path_socket) {
      s.path = l.unix_path;
      struct stat st;
      if (::stat(s.path.c_str(), &st) == 0) s.inode = st.st_ino;
    }
    a->sockets_.push_back(std::move(s));
  }
  a->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (a->wake_fd_ < 0) return absl::InternalError("eventfd failed");
  return a;
}

void UnixAcceptor::Start(grpc::Server* server) {
  if (sockets_.empty() || thread_.joinable()) return;
  thread_ = std::thread([this, server] { Loop(server); });
}

void UnixAcceptor::Loop(grpc::Server* server) {
  // Per listener, our duplicate of each open connection: POLLRDHUP/POLLHUP says it is gone
  // (the peer closed, or gRPC shut it down: gRPC calls shutdown() on a socket before closing
  // it), and the count goes down.
  std::vector<std::vector<int>> open(sockets_.size());
  std::vector<pollfd> fds;
  std::vector<std::pair<size_t, size_t>> who;  // fds[i] -> (listener, index in open) or npos
  for (;;) {
    fds.clear();
    who.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    who.emplace_back(SIZE_MAX, SIZE_MAX);
    for (size_t i = 0; i < sockets_.size(); ++i) {
      fds.push_back({sockets_[i].fd, POLLIN, 0});
      who.emplace_back(i, SIZE_MAX);
      for (size_t j = 0; j < open[i].size(); ++j) {
        fds.push_back({open[i][j], POLLRDHUP, 0});
        who.emplace_back(i, j);
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // Stop()
    std::vector<std::vector<size_t>> gone(sockets_.size());
    for (size_t k = 1; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      auto [i, j] = who[k];
      if (j != SIZE_MAX) {
        gone[i].push_back(j);
        continue;
      }
      int c = ::accept4(sockets_[i].fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (c < 0) continue;
      std::optional<PeerCredentials> cred = ReadPeerCredentials(c, sockets_[i].path_socket);
      if (!cred || static_cast<int>(open[i].size()) >= max_connections_) {
        refused_.fetch_add(1);
        ::close(c);
        continue;
      }
      int watch = ::fcntl(c, F_DUPFD_CLOEXEC, 0);
      if (watch < 0) {
        ::close(c);
        continue;
      }
      open[i].push_back(watch);
      peers_.Record(c, *std::move(cred));  // before gRPC can read a byte of it
      grpc::AddInsecureChannelFromFd(server, c);
    }
    for (size_t i = 0; i < gone.size(); ++i) {
      for (auto it = gone[i].rbegin(); it != gone[i].rend(); ++it) {
        ::close(open[i][*it]);
        open[i].erase(open[i].begin() + static_cast<long>(*it));
      }
    }
  }
  for (std::vector<int>& v : open) {
    for (int fd : v) ::close(fd);
  }
}

void UnixAcceptor::Stop() {
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  for (Socket& s : sockets_) {
    if (s.fd >= 0) ::close(s.fd);
    s.fd = -1;
    struct stat st;
    if (!s.path.empty() && ::stat(s.path.c_str(), &st) == 0 && st.st_ino == s.inode) {
      ::unlink(s.path.c_str());
    }
  }
  sockets_.clear();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  wake_fd_ = -1;
}

UnixAcceptor::~UnixAcceptor() { Stop(); }

}  // namespace skbnf::control
