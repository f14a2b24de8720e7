// SPDX-License-Identifier: BSD-3-Clause
#include "server/skbnfctl/client.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/security/credentials.h>

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace skbnf::ctl {

Client::Client(const Args& a) : args_(a), json_(a.Has("json")) {
  std::string addr = a.Get("addr");
  if (addr.empty()) {
    const char* env = std::getenv("SKBNF_ADDR");
    addr = env != nullptr && *env ? env : "127.0.0.1:50051";
  }
  timeout_s_ = a.Has("timeout") ? ParseUint("--timeout", a.Get("timeout")) : 10;
  bool tls = a.Has("tls") || a.Has("tls_ca") || a.Has("tls_cert");
  if (a.Has("tls_cert") != a.Has("tls_key")) {
    throw UsageError{"--tls-cert and --tls-key go together"};
  }
  grpc::ChannelArguments ch;
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (tls) {
    grpc::SslCredentialsOptions o;
    if (a.Has("tls_ca")) o.pem_root_certs = ReadFile("tls-ca", a.Get("tls_ca"));
    if (a.Has("tls_cert")) {
      o.pem_cert_chain = ReadFile("tls-cert", a.Get("tls_cert"));
      o.pem_private_key = ReadFile("tls-key", a.Get("tls_key"));
    }
    creds = grpc::SslCredentials(o);
    if (a.Has("tls_server_name")) ch.SetSslTargetNameOverride(a.Get("tls_server_name"));
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  stub_ = v1::Control::NewStub(grpc::CreateCustomChannel(addr, creds, ch));
}

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
void Client::Need(const std::vector<std::string>& p, size_t n, const char* what) {
  if (p.size() != n) throw UsageError{absl::StrCat("usage: skbnfctl ", what)};
}

std::unique_ptr<grpc::ClientContext> Client::Ctx(std::chrono::milliseconds extra) const {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s_) + extra);
  return c;
}

int Client::Run(const std::vector<std::string>& p) {
  const std::string& cmd = p[0];
  if (cmd == "info") return Need(p, 1, "info"), Info();
  if (cmd == "ports") return Need(p, 1, "ports"), Ports();
  if (cmd == "strategy") return Strategy(p);
  if (cmd == "stats") return Need(p, 1, "stats [--core=N ...]"), Stats(false);
  if (cmd == "top") return Need(p, 1, "top [--interval=MS] [--count=N]"), Stats(true);
  if (cmd == "routes") return Routes(p);
  if (cmd == "worker") return Worker(p);
  if (cmd == "audit") return Need(p, 1, "audit"), Audit();
  throw UsageError{absl::StrCat("unknown command '", cmd, "'")};
}

}  // namespace skbnf::ctl
