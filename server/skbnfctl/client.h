// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl's client of skbnf.v1.Control: the channel (plaintext or TLS / mTLS from the flags),
// per-call deadlines, how a server error is printed (status code name and message, exit 1) and
// --json output. Each command is a method; they live by topic in *_commands.cc.
//
// A command returns absl::StatusOr<int>: an error status is a command-line error (UsageError,
// args.h: nothing more is sent, main prints it with the usage and exits 2); a value is the exit
// code of what the server answered (0; 1 when it refused or failed, already printed; 130 when a
// tune was interrupted).
#ifndef SKBNF_SERVER_SKBNFCTL_CLIENT_H_
#define SKBNF_SERVER_SKBNFCTL_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/skbnfctl/args.h"
#include "skbnf/v1/control.grpc.pb.h"

namespace skbnf::ctl {

namespace v1 = skbnf::v1;

class Client {
 public:
  // The channel from the flags in `a` (which must outlive the client); a bad --timeout or an
  // unreadable TLS file is a UsageError.
  static absl::StatusOr<std::unique_ptr<Client>> Create(const Args& a);
  // Runs the command in `p` (p[0] is its name).
  absl::StatusOr<int> Run(const std::vector<std::string>& p);

 private:
  Client(const Args& a, uint32_t timeout_s, std::unique_ptr<v1::Control::Stub> stub);
  // A context whose deadline is --timeout (+ `extra`) from now.
  std::unique_ptr<grpc::ClientContext> Ctx(
      std::chrono::milliseconds extra = std::chrono::milliseconds(0)) const;
  static int Fail(const grpc::Status& s);
  void Json(const google::protobuf::Message& m, bool one_line = false) const;
  // OK when `p` has `n` words, else CommandUsage(what).
  static absl::Status Need(const std::vector<std::string>& p, size_t n, absl::string_view what);

  int Info();                                                       // info_commands.cc
  int Ports();                                                      // info_commands.cc
  absl::StatusOr<int> Strategy(const std::vector<std::string>& p);  // strategy_commands.cc
  absl::StatusOr<int> Set(const std::vector<std::string>& p);       // strategy_commands.cc
  absl::StatusOr<int> Tune(const std::vector<std::string>& p);      // tune_command.cc
  absl::StatusOr<int> Stats(bool top);                              // stats_commands.cc
  void PrintStats(const v1::Stats& s) const;                        // stats_commands.cc
  absl::StatusOr<int> Routes(const std::vector<std::string>& p);    // mutation_commands.cc
  absl::StatusOr<int> Worker(const std::vector<std::string>& p);    // mutation_commands.cc
  int Audit();                                                      // mutation_commands.cc
  // AuditPool, waiting once for the server-wide rate limit (--audit-min-interval-ms) when the
  // answer is RESOURCE_EXHAUSTED "... retry in N ms" with N <= 2000: two `skbnfctl audit` or
  // `buffers --exact` in a row (or beside another client's) then both answer instead of the
  // second failing. Any other error, or a second rejection, is returned as it is.
  grpc::Status CallAudit(v1::AuditPoolResponse* r) const;
  int Buffers();                                                   // stats_commands.cc
  absl::StatusOr<int> BufferAges();                                // stats_commands.cc
  void PrintBuffers(const v1::BufferPlaces& b) const;              // stats_commands.cc
  absl::StatusOr<int> Config(const std::vector<std::string>& p);   // config_commands.cc
  absl::StatusOr<int> Latency(const std::vector<std::string>& p);  // latency_commands.cc
  void PrintLatency(const v1::Stats& s) const;                     // latency_commands.cc

  const Args& args_;
  const bool json_;
  const uint32_t timeout_s_;
  std::unique_ptr<v1::Control::Stub> stub_;
};

}  // namespace skbnf::ctl

#endif  // SKBNF_SERVER_SKBNFCTL_CLIENT_H_
