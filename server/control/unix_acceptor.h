// SPDX-License-Identifier: BSD-3-Clause
// UnixAcceptor: the control API's unix sockets (--listen=unix:/path, unix-abstract:name),
// accepted by skbnfd itself so that each peer's credentials are known.
//
// gRPC's own unix listener gives a handler the peer "unix:" and nothing else: its auth context
// carries no credentials (gRPC 1.51 has no SO_PEERCRED anywhere in its auth properties,
// grpc/grpc_security_constants.h). So skbnfd binds and listens itself, reads SO_PEERCRED and
// SO_PEERGROUPS of each accepted connection (what the kernel recorded at connect(): the peer
// cannot change it afterwards), records them by file descriptor (access.h: UnixPeers) and hands
// the connection to the running server with grpc::AddInsecureChannelFromFd
// (grpcpp/server_posix.h), which serves it like any other: the server's channel arguments
// (limits, keepalive, message sizes) and resource quota apply (grpc_server_add_channel_from_fd
// creates the transport from the server's channel_args, chttp2_server.cc in gRPC 1.51).
//
// A path socket is created 0660 (umask 0117 around bind(): no window in which anyone may
// connect), is never taken over from a running daemon (listener.cc checks before), and is
// removed at shutdown if it is still the one skbnfd made (same inode).
//
// At most `max_connections` connections per listener are open at once (--max-connections); one
// more is closed at once and counted as refused. Closed connections are noticed by polling
// them for hang-up.
#ifndef SKBNF_SERVER_CONTROL_UNIX_ACCEPTOR_H_
#define SKBNF_SERVER_CONTROL_UNIX_ACCEPTOR_H_

#include <grpcpp/server.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "server/control/listener.h"
#include "server/core/access.h"

namespace skbnf::control {

class UnixAcceptor {
 public:
  // Binds and listens on every unix listener of `ls` (others are skipped); accepts nothing
  // until Start. Unavailable naming --listen when a socket cannot be made.
  static absl::StatusOr<std::unique_ptr<UnixAcceptor>> Bind(const std::vector<Listener>& ls,
                                                            UnixPeers& peers,
                                                            int max_connections);
  // Accepts on a thread of its own, handing connections to `server` (which must outlive Stop).
  void Start(grpc::Server* server);
  // Stops accepting, closes the listening sockets, removes the socket files it made.
  void Stop();
  ~UnixAcceptor();
  UnixAcceptor(const UnixAcceptor&) = delete;
  UnixAcceptor& operator=(const UnixAcceptor&) = delete;

  bool empty() const { return sockets_.empty(); }
  uint64_t refused() const { return refused_.load(); }

 private:
  struct Socket {
    int fd = -1;
    std::string path;  // a path socket's file ("" for abstract)
    uint64_t inode = 0;
    bool path_socket = true;
  };
  UnixAcceptor(UnixPeers& peers, int max_connections)
      : peers_(peers), max_connections_(max_connections) {}
  void Loop(grpc::Server* server);

  UnixPeers& peers_;
  const int max_connections_;
  std::vector<Socket> sockets_;
  int wake_fd_ = -1;  // eventfd: Stop() wakes the loop
  std::thread thread_;
  std::atomic<uint64_t> refused_{0};
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_UNIX_ACCEPTOR_H_
