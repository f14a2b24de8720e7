// SPDX-License-Identifier: BSD-3-Clause
#include "server/skbnfctl/client.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/security/credentials.h>

#include <cstdlib>
#include <iostream>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace skbnf::ctl {

absl::StatusOr<std::unique_ptr<Client>> Client::Create(const Args& a) {
  std::string addr = a.Get("addr");
  if (addr.empty()) {
    const char* env = std::getenv("SKBNF_ADDR");
    addr = env != nullptr && *env ? env : "127.0.0.1:50051";
  }
  uint32_t timeout_s = 10;
  if (a.Has("timeout")) {
    absl::StatusOr<uint32_t> t = ParseUint("--timeout", a.Get("timeout"));
    if (!t.ok()) return t.status();
    timeout_s = *t;
  }
  bool tls = a.Has("tls") || a.Has("tls_ca") || a.Has("tls_cert");
  if (a.Has("tls_cert") != a.Has("tls_key")) {
    return UsageError("--tls-cert and --tls-key go together");
  }
  grpc::ChannelArguments ch;
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (tls) {
    grpc::SslCredentialsOptions o;
    for (auto [flag, key, out] : {std::tuple{"tls-ca", "tls_ca", &o.pem_root_certs},
                                  std::tuple{"tls-cert", "tls_cert", &o.pem_cert_chain},
                                  std::tuple{"tls-key", "tls_key", &o.pem_private_key}}) {
      if (!a.Has(key)) continue;
      absl::StatusOr<std::string> pem = ReadFile(flag, a.Get(key));
      if (!pem.ok()) return pem.status();
      *out = *std::move(pem);
    }
    creds = grpc::SslCredentials(o);
    if (a.Has("tls_server_name")) ch.SetSslTargetNameOverride(a.Get("tls_server_name"));
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  return std::unique_ptr<Client>(
      new Client(a, timeout_s, v1::Control::NewStub(grpc::CreateCustomChannel(addr, creds, ch))));
}

Client::Client(const Args& a, uint32_t timeout_s, std::unique_ptr<v1::Control::Stub> stub)
    : args_(a), json_(a.Has("json")), timeout_s_(timeout_s), stub_(std::move(stub)) {}

int Client::Fail(const grpc::Status& s) {
  static const char* kNames[] = {"OK",
                                 "CANCELLED",
                                 "UNKNOWN",
                                 "INVALID_ARGUMENT",
                                 "DEADLINE_EXCEEDED",
                                 "NOT_FOUND",
                                 "ALREADY_EXISTS",
                                 "PERMISSION_DENIED",
                                 "RESOURCE_EXHAUSTED",
                                 "FAILED_PRECONDITION",
                                 "ABORTED",
                                 "OUT_OF_RANGE",
                                 "UNIMPLEMENTED",
                                 "INTERNAL",
                                 "UNAVAILABLE",
                                 "DATA_LOSS",
                                 "UNAUTHENTICATED"};
  int c = s.error_code();
  std::cerr << "skbnfctl: " << (c >= 0 && c <= 16 ? kNames[c] : "ERROR") << ": "
            << s.error_message() << "\n";
  return 1;
}
void Client::Json(const google::protobuf::Message& m, bool one_line) const {
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = !one_line;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  std::string out;
  if (auto st = google::protobuf::util::MessageToJsonString(m, &out, o); !st.ok()) {
    std::cerr << "skbnfctl: cannot print the answer as JSON: " << st.ToString() << std::endl;
    return;
  }
  std::cout << out << (one_line || out.empty() || out.back() != '\n' ? "\n" : "");
}
absl::Status Client::Need(const std::vector<std::string>& p, size_t n, absl::string_view what) {
  return p.size() == n ? absl::OkStatus() : CommandUsage(what);
}

std::unique_ptr<grpc::ClientContext> Client::Ctx(std::chrono::milliseconds extra) const {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s_) + extra);
  return c;
}

absl::StatusOr<int> Client::Run(const std::vector<std::string>& p) {
  const std::string& cmd = p[0];
  if (cmd == "info" || cmd == "ports" || cmd == "audit") {  // no arguments
    if (absl::Status st = Need(p, 1, cmd); !st.ok()) return st;
    return cmd == "info" ? Info() : cmd == "ports" ? Ports() : Audit();
  }
  if (cmd == "stats" || cmd == "top") {  // flags only
    const bool top = cmd == "top";
    absl::Status st = Need(p, 1, top ? "top [--interval=MS] [--count=N]" : "stats [--core=N ...]");
    if (!st.ok()) return st;
    return Stats(top);
  }
  if (cmd == "strategy") return Strategy(p);
  if (cmd == "routes") return Routes(p);
  if (cmd == "worker") return Worker(p);
  if (cmd == "config") return Config(p);
  if (cmd == "latency") return Latency(p);
  if (cmd == "buffers") {
    constexpr absl::string_view kWhat =
        "buffers [--exact] | buffers --ages [--oldest=N] [--older-than=DURATION]";
    if (absl::Status st = Need(p, 1, kWhat); !st.ok()) return st;
    const bool ages = args_.Has("ages") || args_.Has("oldest") || args_.Has("older_than");
    if (ages && args_.Has("exact")) {
      return UsageError(absl::StrCat(
          "--exact and --ages do not go together: the ages come from the daemon's census "
          "(usage: skbnfctl ", kWhat, ")"));
    }
    if (ages) return BufferAges();
    return Buffers();
  }
  return UsageError(absl::StrCat("unknown command '", cmd, "'"));
}

}  // namespace skbnf::ctl
