// SPDX-License-Identifier: BSD-3-Clause
// Test harness: starts the daemon under test (SKBNF_CONTROL_DAEMON, default the fake daemon) on
// loopback with ports chosen by the kernel, waits for its --ready-file, and stops it with
// SIGTERM. The same tests run against skbnfd by setting SKBNF_CONTROL_DAEMON (and
// SKBNF_CONTROL_DAEMON_ARGS for its EAL/vdev arguments, split on spaces).
#ifndef SKBNF_TESTS_CONTROL_DAEMON_HARNESS_H_
#define SKBNF_TESTS_CONTROL_DAEMON_HARNESS_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "skbnf/v1/control.grpc.pb.h"

namespace skbnf::control::testing {

// A temporary directory removed with everything in it at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string DaemonPath();
std::vector<std::string> DaemonBaseArgs();
bool DaemonIsFake();  // fake-only tests (sim flags) skip otherwise
// Arguments that make the daemon run on DPDK's native mempool ($SKBNF_CONTROL_DAEMON_NATIVE_ARGS;
// the fake's --sim-native by default); empty: the test that needs them skips.
std::vector<std::string> NativePoolArgs();
// Worker core 1 late to its quiescent point, so swaps with a short quiesce timeout roll back
// ($SKBNF_CONTROL_DAEMON_STALL_ARGS); io forwarding mode ($SKBNF_CONTROL_DAEMON_IO_ARGS). Empty:
// the test that needs them skips.
std::vector<std::string> StallArgs();
std::vector<std::string> IoModeArgs();
// GET http://127.0.0.1:port/path; the body ("" on failure).
std::string HttpGet(int port, const std::string& path);
// The value of one series of /metrics on `port`, e.g.
// `skbnf_control_changes_total{rpc="SetStrategy",result="ok",source="rpc"}`; -1 when absent.
double MetricValue(int port, const std::string& series);

class Daemon {
 public:
  // Starts the daemon with base args + `args` + --ready-file (+ loopback port-0 defaults for
  // --listen and --metrics-addr unless `args` give them). nullptr on failure, with `error` set
  // to the reason and the daemon's stderr.
  static std::unique_ptr<Daemon> Start(const std::vector<std::string>& args, std::string* error);
  ~Daemon();  // Stop()

  // SIGTERM, wait; the exit status (or -1).
  int Stop();
  const std::string& grpc_address() const { return grpc_address_; }
  // --health-listen's address with the chosen port ("" when the daemon was not given one).
  const std::string& health_address() const { return health_address_; }
  int metrics_port() const { return metrics_port_; }
  std::string Stderr() const;
  std::unique_ptr<v1::Control::Stub> Stub() const;  // plaintext
  std::shared_ptr<grpc::Channel> Channel() const;   // plaintext

 private:
  Daemon() = default;
  TempDir dir_;
  pid_t pid_ = -1;
  std::string grpc_address_;
  std::string health_address_;
  int metrics_port_ = 0;
};

// Runs the daemon expecting it to exit by itself within `timeout_s` (start-up refusals).
// Returns the exit code (-1 if it had to be killed) and fills `stderr_text`.
int RunDaemonToExit(const std::vector<std::string>& args, int timeout_s, std::string* stderr_text);

// Runs a shell command, returns its exit status.
int Shell(const std::string& cmd);

}  // namespace skbnf::control::testing

#endif  // SKBNF_TESTS_CONTROL_DAEMON_HARNESS_H_
