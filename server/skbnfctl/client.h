// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl's client of skbnf.v1.Control: the channel (plaintext or TLS / mTLS from the flags),
// per-call deadlines, how a server error is printed (status code name and message, exit 1) and
// --json output. Each command is a method; they live by topic in *_commands.cc.
#ifndef SKBNF_SERVER_SKBNFCTL_CLIENT_H_
#define SKBNF_SERVER_SKBNFCTL_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/skbnfctl/args.h"
#include "skbnf/v1/control.grpc.pb.h"

namespace skbnf::ctl {

namespace v1 = skbnf::v1;

class Client {
 public:
  explicit Client(const Args& a);
  // Runs the command in `p` (p[0] is its name); the process exit code.
  int Run(const std::vector<std::string>& p);

 private:
  // A context whose deadline is --timeout (+ `extra`) from now.
  std::unique_ptr<grpc::ClientContext> Ctx(
      std::chrono::milliseconds extra = std::chrono::milliseconds(0)) const;
  static int Fail(const grpc::Status& s);
  void Json(const google::protobuf::Message& m, bool one_line = false) const;
  static void Need(const std::vector<std::string>& p, size_t n, const char* what);

  int Info();                                       // info_commands.cc
  int Ports();                                      // info_commands.cc
  int Strategy(const std::vector<std::string>& p);  // strategy_commands.cc
  int Tune(const std::vector<std::string>& p);      // tune_command.cc (strategy tune)
  int Stats(bool top);                              // stats_commands.cc
  void PrintStats(const v1::Stats& s) const;        // stats_commands.cc
  int Routes(const std::vector<std::string>& p);    // mutation_commands.cc
  int Worker(const std::vector<std::string>& p);    // mutation_commands.cc
  int Audit();                                      // mutation_commands.cc

  const Args& args_;
  const bool json_;
  uint32_t timeout_s_ = 10;
  std::unique_ptr<v1::Control::Stub> stub_;
};

}  // namespace skbnf::ctl

#endif  // SKBNF_SERVER_SKBNFCTL_CLIENT_H_
