// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/access.h"

#include <arpa/inet.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace skbnf::control {
namespace {

// "ipv4:1.2.3.4:5" -> "1.2.3.4"; "ipv6:[::1]:5" (or %5B..%5D) -> "::1"; "" otherwise.
std::string PeerHost(absl::string_view peer) {
  std::string p = absl::StrReplaceAll(peer, {{"%5B", "["}, {"%5D", "]"}, {"%25", "%"}});
  absl::string_view v = p;
  if (absl::ConsumePrefix(&v, "ipv4:")) {
    size_t colon = v.rfind(':');
    return std::string(colon == absl::string_view::npos ? v : v.substr(0, colon));
  }
  if (absl::ConsumePrefix(&v, "ipv6:")) {
    if (absl::ConsumePrefix(&v, "[")) {
      size_t close = v.find(']');
      if (close == absl::string_view::npos) return "";
      std::string host(v.substr(0, close));
      size_t zone = host.find('%');
      return zone == std::string::npos ? host : host.substr(0, zone);
    }
  }
  return "";
}

}  // namespace

bool IsLoopbackPeer(absl::string_view peer) {
  const std::string host = PeerHost(peer);
  if (host.empty()) return false;
  in_addr a4;
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1) {
    return (ntohl(a4.s_addr) >> 24) == 127;
  }
  in6_addr a6;
  if (::inet_pton(AF_INET6, host.c_str(), &a6) != 1) return false;
  static const in6_addr kLoop = IN6ADDR_LOOPBACK_INIT;
  if (std::equal(a6.s6_addr, a6.s6_addr + 16, kLoop.s6_addr)) return true;
  // ::ffff:127.x.y.z (a v4 client of a dual-stack listener).
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::equal(kMapped, kMapped + 12, a6.s6_addr) && a6.s6_addr[12] == 127;
}

std::string Caller::Identity() const {
  if (!verified_cert) return "-";
  std::string out = absl::StrCat("CN=", common_name.empty() ? "-" : common_name);
  if (!names.empty()) absl::StrAppend(&out, " SAN=", absl::StrJoin(names, ","));
  return out;
}

std::string Caller::ClientKey() const {
  if (verified_cert) return Identity();
  if (absl::StartsWith(peer, "unix")) return "unix";
  std::string host = PeerHost(peer);
  return host.empty() ? peer : host;
}

Caller IdentifyCaller(const grpc::ServerContext& ctx) {
  Caller c;
  c.peer = ctx.peer();
  c.loopback = IsLoopbackPeer(c.peer);
  std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  // With client-certificate verification on, the TLS layer sets a peer identity only for a
  // certificate that chains to --tls-client-ca.
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_X509_SAN_PROPERTY_NAME)) {
      c.names.emplace_back(v.data(), v.size());
    }
    for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME)) {
      c.common_name.assign(v.data(), v.size());
    }
    c.verified_cert = true;
  }
  return c;
}

grpc::Status AuthorizeChange(const AccessPolicy& policy, const Caller& caller,
                             absl::string_view rpc) {
  auto deny = [&](absl::string_view why) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat(rpc, " changes the data plane and ", why));
  };
  switch (policy.listener) {
    case AccessPolicy::Listener::kUnixPath:
      return grpc::Status::OK;
    case AccessPolicy::Listener::kPlaintext:
      if (caller.loopback) return grpc::Status::OK;
      return deny(absl::StrCat(
          "is open only to clients on this host (this one is ", caller.peer,
          "); remote clients need a client certificate on a TLS listener (--tls-client-ca)"));
    case AccessPolicy::Listener::kAbstract:
      return deny(
          "an abstract unix socket has no permissions (any process in the network namespace can "
          "connect): listen on unix:/path or use TLS with a client certificate");
    case AccessPolicy::Listener::kTls:
      break;
  }
  if (!policy.client_ca || !caller.verified_cert) {
    return deny(
        "needs a client certificate signed by the server's --tls-client-ca; without one a TLS "
        "client may only read");
  }
  if (policy.allowed_names.empty()) return grpc::Status::OK;
  for (const std::string& n : caller.names) {
    if (std::find(policy.allowed_names.begin(), policy.allowed_names.end(), n) !=
        policy.allowed_names.end()) {
      return grpc::Status::OK;
    }
  }
  return deny(absl::StrCat("needs a client certificate naming one of --tls-client-names (",
                           absl::StrJoin(policy.allowed_names, ","),
                           ") as a subject alternative name; this one is ", caller.Identity()));
}

}  // namespace skbnf::control
