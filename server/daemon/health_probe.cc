// SPDX-License-Identifier: BSD-3-Clause
// skbnf_health: asks a skbnfd's grpc.health.v1 whether a service is SERVING; exit 0 if so, 1 if
// not, 2 on a usage error. The container's HEALTHCHECK runs it, and Kubernetes exec probes can.
// The kubelet's own gRPC probe on --health-listen is the lighter choice there: it spawns no
// process in the pod's exclusive cpuset next to the polling workers.
//
// Services (server/control/health.h): "liveness" (the control plane answers and reads the data
// plane; a link flap never fails it), "readiness" (every port started with its link up, every
// worker loop running); "" and "skbnf.v1.Control" mean readiness.
//
// Why a separate binary: it speaks plaintext or TLS (server CA, optional client certificate,
// server-name override) to the same listener users reach, so an exec probe checks what clients
// see, where the kubelet's gRPC probe cannot speak TLS at all. It sends
// grpc.health.v1.Health/Check through a generic stub: HealthCheckRequest{service} is one
// length-delimited field, HealthCheckResponse{status} one varint, so no generated code is
// needed. Health is a read: any TLS client may ask, no client certificate required.
//
// --alive: exit 0 whenever the server answers (any health status). Kept for older charts;
// --service=liveness is the liveness question skbnfd itself answers.
//
//   skbnf_health [--addr=127.0.0.1:50051] [--service=NAME] [--timeout=SECONDS] [--alive]
//                [--tls-ca=FILE [--tls-cert=FILE --tls-key=FILE] [--tls-server-name=NAME]]
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/byte_buffer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"

namespace {

constexpr const char* kUsage =
    "usage: skbnf_health [--addr=HOST:PORT|unix:PATH] [--service=NAME] [--timeout=SECONDS]\n"
    "                    --service: liveness | readiness (\"\" and skbnf.v1.Control: "
    "readiness)\n"
    "                    [--alive]  (exit 0 on any answer: liveness)\n"
    "                    [--tls-ca=FILE] [--tls-cert=FILE --tls-key=FILE] "
    "[--tls-server-name=NAME]\n"
    "exit 0: SERVING; 1: not serving or unreachable; 2: usage error\n";

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  *out = s.str();
  return true;
}

int Usage(const std::string& why) {
  std::fprintf(stderr, "skbnf_health: %s\n%s", why.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {
      {"addr", "127.0.0.1:50051"}, {"service", ""}, {"timeout", "3"}};
  bool alive = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--alive") {
      alive = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    size_t eq = a.find('=');
    if (a.rfind("--", 0) != 0 || eq == std::string::npos) return Usage("bad argument: " + a);
    std::string key = a.substr(2, eq - 2);
    if (key != "addr" && key != "service" && key != "timeout" && key != "tls-ca" &&
        key != "tls-cert" && key != "tls-key" && key != "tls-server-name") {
      return Usage("unknown flag --" + key);
    }
    flags[key] = a.substr(eq + 1);
  }
  char* end = nullptr;
  double timeout = std::strtod(flags["timeout"].c_str(), &end);
  if (*end != '\0' || !(timeout > 0)) return Usage("--timeout wants seconds > 0");
  if (flags.count("tls-cert") != flags.count("tls-key")) {
    return Usage("--tls-cert and --tls-key go together");
  }

  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  grpc::ChannelArguments args;
  if (flags.count("tls-ca") || flags.count("tls-cert")) {
    grpc::SslCredentialsOptions o;
    if (flags.count("tls-ca") && !ReadFile(flags["tls-ca"], &o.pem_root_certs)) {
      return Usage("cannot read --tls-ca " + flags["tls-ca"]);
    }
    if (flags.count("tls-cert") && (!ReadFile(flags["tls-cert"], &o.pem_cert_chain) ||
                                    !ReadFile(flags["tls-key"], &o.pem_private_key))) {
      return Usage("cannot read --tls-cert/--tls-key");
    }
    creds = grpc::SslCredentials(o);
    if (flags.count("tls-server-name")) {
      args.SetSslTargetNameOverride(flags["tls-server-name"]);
    }
  }
  auto channel = grpc::CreateCustomChannel(flags["addr"], creds, args);
  grpc::GenericStub stub(channel);

  // HealthCheckRequest { string service = 1; }
  std::string req;
  const std::string& service = flags["service"];
  if (!service.empty()) {
    if (service.size() > 127) return Usage("--service too long");
    req.push_back(0x0a);
    req.push_back(static_cast<char>(service.size()));
    req += service;
  }
  grpc::Slice slice(req);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000)));
  absl::Notification done;  // the callback's write of `status` happens before the wait returns
  grpc::Status status;
  stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  if (!status.ok()) {
    std::fprintf(stderr, "skbnf_health: %s: %s\n", flags["addr"].c_str(),
                 status.error_message().c_str());
    return 1;
  }
  std::vector<grpc::Slice> slices;
  if (grpc::Status dumped = response.Dump(&slices); !dumped.ok()) {
    std::fprintf(stderr, "skbnf_health: %s: unreadable response: %s\n", flags["addr"].c_str(),
                 dumped.error_message().c_str());
    return 1;
  }
  std::string body;
  for (const grpc::Slice& s : slices)
    body.append(reinterpret_cast<const char*>(s.begin()), s.size());
  // HealthCheckResponse { ServingStatus status = 1; } SERVING = 1; absent field = UNKNOWN (0).
  int st = body.size() >= 2 && body[0] == 0x08 ? body[1] : 0;
  static const char* kNames[] = {"UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"};
  std::printf("%s\n", st >= 0 && st <= 3 ? kNames[st] : "UNKNOWN");
  return st == 1 || alive ? 0 : 1;
}
