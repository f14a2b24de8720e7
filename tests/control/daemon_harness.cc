// SPDX-License-Identifier: BSD-3-Clause
#include "tests/control/daemon_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace skbnf::control::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Tiny extraction from the ready file's one-line JSON.
std::string JsonField(const std::string& json, const std::string& key) {
  std::string k = "\"" + key + "\":";
  size_t at = json.find(k);
  if (at == std::string::npos) return "";
  at += k.size();
  if (json[at] == '"') {
    size_t end = json.find('"', at + 1);
    return json.substr(at + 1, end - at - 1);
  }
  size_t end = json.find_first_of(",}", at);
  return json.substr(at, end - at);
}

pid_t Spawn(const std::vector<std::string>& args, const std::string& stderr_path) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  FILE* err = std::freopen(stderr_path.c_str(), "w", stderr);
  (void)err;
  FILE* out = std::freopen("/dev/null", "w", stdout);
  (void)out;
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

// Daemon, its base args up to a "--" (EAL arguments follow it), our flags, the rest.
std::vector<std::string> FullArgs(const std::vector<std::string>& args) {
  std::vector<std::string> all = {DaemonPath()};
  std::vector<std::string> base = DaemonBaseArgs();
  auto dashdash = std::find(base.begin(), base.end(), "--");
  all.insert(all.end(), base.begin(), dashdash);
  bool listen = false, metrics = false, role = false;
  for (const std::string& a : args) {
    listen |= absl::StartsWith(a, "--listen");
    metrics |= absl::StartsWith(a, "--metrics-addr") || absl::StartsWith(a, "--metrics_addr");
    role |= absl::StartsWith(a, "--loopback-role") || absl::StartsWith(a, "--loopback_role");
  }
  if (!listen) all.push_back("--listen=127.0.0.1:0");
  // The suites call every RPC from loopback TCP, which grants no role (server/core/access.h)
  // but with --loopback-role; tests of the roles themselves pass their own.
  if (!role) all.push_back("--loopback-role=admin");
  if (!metrics) all.push_back("--metrics-addr=127.0.0.1:0");
  for (const std::string& a : args) all.push_back(a);
  all.insert(all.end(), dashdash, base.end());
  return all;
}

}  // namespace

TempDir::TempDir() {
  char tmpl[] = "/tmp/skbnf-control-XXXXXX";
  char* p = mkdtemp(tmpl);
  path_ = p != nullptr ? p : "/tmp";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (path_ != "/tmp") std::filesystem::remove_all(path_, ec);
}

std::string DaemonPath() {
  const char* env = std::getenv("SKBNF_CONTROL_DAEMON");
  return env != nullptr && *env ? env : SKBNF_FAKE_DAEMON_PATH;
}

std::vector<std::string> DaemonBaseArgs() {
  const char* env = std::getenv("SKBNF_CONTROL_DAEMON_ARGS");
  if (env == nullptr) return {};
  return absl::StrSplit(env, ' ', absl::SkipEmpty());
}

std::vector<std::string> NativePoolArgs() {
  const char* env = std::getenv("SKBNF_CONTROL_DAEMON_NATIVE_ARGS");
  if (env != nullptr) return absl::StrSplit(env, ' ', absl::SkipEmpty());
  if (DaemonIsFake()) return {"--sim-native"};
  return {};
}

std::vector<std::string> StallArgs() {
  const char* env = std::getenv("SKBNF_CONTROL_DAEMON_STALL_ARGS");
  if (env == nullptr) return {};
  return absl::StrSplit(env, ' ', absl::SkipEmpty());
}

std::vector<std::string> IoModeArgs() {
  const char* env = std::getenv("SKBNF_CONTROL_DAEMON_IO_ARGS");
  if (env == nullptr) return {};
  return absl::StrSplit(env, ' ', absl::SkipEmpty());
}

double MetricValue(int port, const std::string& series) {
  const std::string text = HttpGet(port, "/metrics");
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, series + " ")) continue;
    double v = 0;
    if (absl::SimpleAtod(line, &v)) return v;
  }
  return -1;
}

std::string HttpGet(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) out.append(buf, n);
    }
  }
  ::close(fd);
  const size_t body = out.find("\r\n\r\n");
  return body == std::string::npos ? "" : out.substr(body + 4);
}

bool DaemonIsFake() { return absl::StrContains(DaemonPath(), "skbnf_fake_daemon"); }

std::unique_ptr<Daemon> Daemon::Start(const std::vector<std::string>& args, std::string* error) {
  std::unique_ptr<Daemon> d(new Daemon());
  const std::string ready = d->dir_.File("ready.json");
  // First, so that it stays among the daemon's flags when `args` carry EAL arguments after "--".
  std::vector<std::string> with_ready = {"--ready-file=" + ready};
  with_ready.insert(with_ready.end(), args.begin(), args.end());
  std::vector<std::string> all = FullArgs(with_ready);
  d->pid_ = Spawn(all, d->dir_.File("stderr"));
  // Start-up is bounded by the daemon itself (EAL init, listen); this only guards a hang.
  for (int i = 0; i < 3000; ++i) {
    if (std::filesystem::exists(ready)) {
      std::string json = ReadAll(ready);
      d->grpc_address_ = JsonField(json, "grpc");
      d->health_address_ = JsonField(json, "health");
      (void)absl::SimpleAtoi(JsonField(json, "metrics_port"), &d->metrics_port_);
      return d;
    }
    int status = 0;
    if (waitpid(d->pid_, &status, WNOHANG) == d->pid_) {
      d->pid_ = -1;
      if (error != nullptr) *error = "daemon exited during start-up: " + d->Stderr();
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (error != nullptr) *error = "daemon did not become ready in 30 s: " + d->Stderr();
  return nullptr;
}

Daemon::~Daemon() { Stop(); }

int Daemon::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 1000; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return -1;
}

std::string Daemon::Stderr() const { return ReadAll(dir_.File("stderr")); }

std::shared_ptr<grpc::Channel> Daemon::Channel() const {
  return grpc::CreateChannel(grpc_address_, grpc::InsecureChannelCredentials());
}

std::unique_ptr<v1::Control::Stub> Daemon::Stub() const { return v1::Control::NewStub(Channel()); }

int RunDaemonToExit(const std::vector<std::string>& args, int timeout_s, std::string* stderr_text) {
  TempDir dir;
  std::vector<std::string> all = FullArgs(args);
  pid_t pid = Spawn(all, dir.File("stderr"));
  int status = 0, code = -1;
  bool exited = false;
  for (int i = 0; i < timeout_s * 100 && !exited; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  *stderr_text = ReadAll(dir.File("stderr"));
  return code;
}

int Shell(const std::string& cmd) {
  int s = std::system(cmd.c_str());
  return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
}

}  // namespace skbnf::control::testing
