// SPDX-License-Identifier: BSD-3-Clause
// Access: who is calling the control API (peer, certificate identity) and whether they may
// change the data plane.
//
// Reads are open to anyone who can connect; changes (SetStrategy commit, AddRoute, DeleteRoute,
// PauseWorker, ResumeWorker, AuditPool, which parks every worker) are decided per call:
//
//   listener                              who may change
//   ------------------------------------  -------------------------------------------------------
//   plaintext unix socket (a path)        every peer: the socket's mode (0660, set race-free by
//                                         the umask at bind) decides who can connect
//   plaintext IP (loopback, or any        peers whose address is loopback (127.0.0.0/8, ::1,
//   address with --insecure-remote)       ::ffff:127.x): a remote client never changes anything
//   plaintext abstract unix socket        nobody: any process in the network namespace can
//   (unix-abstract:, --insecure-remote)   connect, there is no file to restrict
//   TLS                                   clients whose certificate the TLS layer verified against
//                                         --tls-client-ca; with --tls-client-names, only those
//                                         whose certificate names one of them as a subject
//                                         alternative name (DNS, URI, e-mail or IP SAN)
//
// A refusal is PERMISSION_DENIED saying what is missing. The caller's identity is what the change
// log (change_log.h) records and what the per-client limits (limits.h) count by.
#ifndef SKBNF_SERVER_CORE_ACCESS_H_
#define SKBNF_SERVER_CORE_ACCESS_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace skbnf::control {

struct AccessPolicy {
  enum class Listener {
    kUnixPath,   // plaintext unix:/path
    kPlaintext,  // plaintext host:port: loopback peers may change
    kAbstract,   // plaintext unix-abstract: nobody may change
    kTls,        // certificate verified against the client CA (and allowed names)
  };
  Listener listener = Listener::kPlaintext;
  bool client_ca = false;                  // kTls: --tls-client-ca given
  std::vector<std::string> allowed_names;  // kTls: --tls-client-names; empty = any verified
};

struct Caller {
  std::string peer;                // gRPC's peer: "ipv4:127.0.0.1:41234", "unix:", ...
  bool loopback = false;           // peer address is loopback
  bool verified_cert = false;      // TLS client certificate verified against the client CA
  std::vector<std::string> names;  // the certificate's subject alternative names
  std::string common_name;         // its subject CN
  // "CN=operator SAN=ops.example" or "-" without a certificate: for logs.
  std::string Identity() const;
  // What per-client limits count by: the certificate identity, else the peer's address without
  // its port ("unix" for every unix-socket client).
  std::string ClientKey() const;
};

Caller IdentifyCaller(const grpc::ServerContext& ctx);
// "ipv4:127.0.0.1:5" / "ipv6:[::1]:5" / "ipv6:%5B::ffff:127.0.0.1%5D:5" -> true.
bool IsLoopbackPeer(absl::string_view peer);

// OK, or PERMISSION_DENIED "<rpc> changes the data plane and needs ...".
grpc::Status AuthorizeChange(const AccessPolicy& policy, const Caller& caller,
                             absl::string_view rpc);

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_ACCESS_H_
