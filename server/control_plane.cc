#include "server/control_plane.h"

#include <arpa/inet.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "prometheus/exposer.h"
#include "server/control_service.h"
#include "server/metrics.h"
#include "server/stats_sampler.h"
#include "server/swap_metrics.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC listen address: host:port (port 0 picks a free one) or unix:/path. Anything but "
          "loopback or a unix socket needs --tls-cert/--tls-key (or --insecure-remote).");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate (chain) for the gRPC listener.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: on a TLS listener, only clients presenting a certificate it signed may "
          "call mutating RPCs (mTLS). Without it a TLS listener is read-only.");
ABSL_FLAG(bool, insecure_remote, false,
          "Allow a plaintext gRPC listener on a non-loopback address, with mutations open to "
          "anyone who can connect. For isolated labs only.");
ABSL_FLAG(std::string, metrics_addr, ":9478",
          "Prometheus endpoint [host]:port, served at /metrics (port 0 picks a free one); "
          "'off' disables it.");
ABSL_FLAG(std::string, ready_file, "",
          "When set, written once both servers listen: {\"grpc\":ADDR,\"metrics_port\":N}.");

namespace skbnf::control {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Splits "host:port" / "[v6]:port"; false when malformed.
bool SplitHostPort(const std::string& addr, std::string* host, std::string* port) {
  size_t colon = addr.rfind(':');
  if (colon == std::string::npos) return false;
  *host = addr.substr(0, colon);
  *port = addr.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  int p = 0;
  return absl::SimpleAtoi(*port, &p) && p >= 0 && p <= 65535;
}

// Connects to host:port and closes at once (best effort).
void WakeListener(const std::string& host, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) {
    ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  }
  (void)::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  ::close(fd);
}

bool UnixSocketAnswers(const std::string& path) {
  sockaddr_un sa = {};
  if (path.size() >= sizeof(sa.sun_path)) return false;
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return false;
  bool answers = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  ::close(fd);
  return answers;
}

std::atomic<bool> g_signalled{false};
void OnSignal(int) { g_signalled.store(true); }

}  // namespace

ControlOptions OptionsFromFlags() {
  ControlOptions o;
  o.listen = absl::GetFlag(FLAGS_listen);
  o.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key = absl::GetFlag(FLAGS_tls_key);
  o.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  o.insecure_remote = absl::GetFlag(FLAGS_insecure_remote);
  o.metrics_addr = absl::GetFlag(FLAGS_metrics_addr);
  o.ready_file = absl::GetFlag(FLAGS_ready_file);
  return o;
}

std::vector<char*> ParseFlags(int argc, char** argv) {
  // The strings must outlive the returned pointers: keep them for the process' life.
  static std::vector<std::string>* storage = new std::vector<std::string>();
  storage->clear();
  bool flags_done = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") flags_done = true;
    if (!flags_done && i > 0 && absl::StartsWith(a, "--")) {
      size_t end = std::min(a.find('='), a.size());
      for (size_t k = 2; k < end; ++k) {
        if (a[k] == '-') a[k] = '_';
      }
    }
    storage->push_back(std::move(a));
  }
  std::vector<char*> ptrs;
  for (std::string& s : *storage) ptrs.push_back(s.data());
  ptrs.push_back(nullptr);
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(ptrs.size()) - 1, ptrs.data());
  return positional;
}

bool IsLocalAddress(const std::string& addr) {
  if (absl::StartsWith(addr, "unix:") || absl::StartsWith(addr, "unix-abstract:")) return true;
  std::string host, port;
  if (!SplitHostPort(addr, &host, &port)) return false;
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8, dotted quad.
  int a = 0, b = 0, c = 0, d = 0;
  char tail = 0;
  if (std::sscanf(host.c_str(), "%d.%d.%d.%d%c", &a, &b, &c, &d, &tail) == 4) {
    return a == 127 && b >= 0 && b < 256 && c >= 0 && c < 256 && d >= 0 && d < 256;
  }
  return false;
}

struct ControlPlane::Impl {
  Backend* backend = nullptr;
  std::string grpc_address;
  int metrics_port = 0;
  std::string metrics_address;  // host part of --metrics-addr ("" = every address)
  SwapMetrics swaps;
  std::unique_ptr<StatsSampler> sampler;
  std::unique_ptr<ControlService> service;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<MetricsCollector> collector;
  std::unique_ptr<prometheus::Exposer> exposer;
  std::thread health_thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  bool down = false;

  int last_serving = -1;

  // Publishes the Backend's health to grpc.health.v1 ("" and "skbnf.v1.Control").
  void UpdateHealth() {
    Health h = backend->GetHealth();
    bool serving = h.ports_up && h.workers_running;
    grpc::HealthCheckServiceInterface* hs = server->GetHealthCheckService();
    if (hs != nullptr) {
      hs->SetServingStatus(serving);
      hs->SetServingStatus("skbnf.v1.Control", serving);
    }
    if (static_cast<int>(serving) != last_serving) {
      std::cerr << "skbnf-control: health " << (serving ? "SERVING" : "NOT_SERVING")
                << (h.detail.empty() ? "" : " (") << h.detail << (h.detail.empty() ? "" : ")")
                << std::endl;
      last_serving = serving;
    }
  }

  void HealthLoop() {
    std::unique_lock<std::mutex> l(mu);
    while (!cv.wait_for(l, std::chrono::milliseconds(250), [this] { return stop; })) {
      l.unlock();
      UpdateHealth();
      l.lock();
    }
  }
};

ControlPlane::ControlPlane(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ControlPlane::~ControlPlane() { Shutdown(); }
const std::string& ControlPlane::grpc_address() const { return impl_->grpc_address; }
int ControlPlane::metrics_port() const { return impl_->metrics_port; }

absl::StatusOr<std::unique_ptr<ControlPlane>> ControlPlane::Start(Backend& backend,
                                                                  const ControlOptions& o) {
  // ---- listener rules, checked before anything listens
  const bool tls = !o.tls_cert.empty() || !o.tls_key.empty();
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key must be given together");
  }
  if (!o.tls_client_ca.empty() && !tls) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  const bool unix_socket = absl::StartsWith(o.listen, "unix:");
  std::string host, port;
  if (!unix_socket && !absl::StartsWith(o.listen, "unix-abstract:") &&
      !SplitHostPort(o.listen, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen: '", o.listen, "' is not host:port or unix:/path"));
  }
  const bool local = IsLocalAddress(o.listen);
  if (!local && !tls && !o.insecure_remote) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve the control API on non-loopback address '", o.listen,
        "' without TLS: give --tls-cert and --tls-key (and --tls-client-ca so that mutations "
        "are possible), listen on 127.0.0.1 or a unix socket, or pass --insecure-remote to "
        "accept plaintext from the network"));
  }

  std::shared_ptr<grpc::ServerCredentials> creds;
  MutationPolicy policy = MutationPolicy::kAnyClient;
  if (tls) {
    absl::StatusOr<std::string> cert = ReadFile("tls-cert", o.tls_cert);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadFile("tls-key", o.tls_key);
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions so(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    if (!o.tls_client_ca.empty()) {
      absl::StatusOr<std::string> ca = ReadFile("tls-client-ca", o.tls_client_ca);
      if (!ca.ok()) return ca.status();
      // Verify a certificate when one is presented, but let certificate-less clients in: they
      // may read; ControlService refuses their mutations.
      so.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
      so.pem_root_certs = *ca;
    }
    so.pem_key_cert_pairs.push_back({*key, *cert});
    creds = grpc::SslServerCredentials(so);
    policy = MutationPolicy::kVerifiedClientCert;
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  if (unix_socket) {
    std::string path = o.listen.substr(5);
    if (absl::StartsWith(path, "//")) path = path.substr(2);
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
      // A socket someone still accepts on belongs to a running daemon: do not steal it. One
      // nobody answers is left over from a daemon that died: replace it.
      if (UnixSocketAnswers(path)) {
        return absl::UnavailableError(
            absl::StrCat("--listen: unix socket '", path, "' is in use by a running process"));
      }
      ::unlink(path.c_str());
    }
  }

  auto impl = std::make_unique<Impl>();
  impl->backend = &backend;
  impl->sampler = std::make_unique<StatsSampler>(backend, std::chrono::milliseconds(250),
                                                 std::chrono::milliseconds(1000));
  impl->service = std::make_unique<ControlService>(backend, *impl->sampler, impl->swaps, policy);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default: a second daemon on the same port would start and
  // silently share the clients. One control endpoint per port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int selected_port = 0;
  builder.AddListeningPort(o.listen, creds, &selected_port);
  builder.RegisterService(impl->service.get());
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || (!unix_socket && selected_port == 0)) {
    return absl::UnavailableError(absl::StrCat("--listen: cannot listen on '", o.listen, "'"));
  }
  if (unix_socket) {
    // Local access control of a unix socket is its mode: owner and group only.
    std::string path = o.listen.substr(5);
    if (absl::StartsWith(path, "//")) path = path.substr(2);
    ::chmod(path.c_str(), 0660);
  }
  impl->grpc_address =
      unix_socket || host.empty()
          ? o.listen
          : absl::StrCat(o.listen.substr(0, o.listen.rfind(':')), ":", selected_port);

  if (!o.metrics_addr.empty() && o.metrics_addr != "off") {
    // civetweb syntax: "port" binds every IPv4 address, "ip:port" one of them.
    std::string bind =
        absl::StartsWith(o.metrics_addr, ":") ? o.metrics_addr.substr(1) : o.metrics_addr;
    try {
      impl->exposer = std::make_unique<prometheus::Exposer>(bind, 2);
    } catch (const std::exception& e) {
      impl->server->Shutdown();
      return absl::UnavailableError(
          absl::StrCat("--metrics-addr: cannot listen on '", o.metrics_addr, "': ", e.what()));
    }
    impl->collector = std::make_shared<MetricsCollector>(backend, *impl->sampler, impl->swaps);
    impl->exposer->RegisterCollectable(impl->collector, "/metrics");
    impl->metrics_address =
        bind.find(':') == std::string::npos ? "" : bind.substr(0, bind.rfind(':'));
    std::vector<int> ports = impl->exposer->GetListeningPorts();
    impl->metrics_port = ports.empty() ? 0 : ports[0];
  }

  impl->UpdateHealth();  // before anyone is told we are ready
  Impl* raw = impl.get();
  impl->health_thread = std::thread([raw] { raw->HealthLoop(); });

  std::cerr << "skbnf-control: gRPC on " << impl->grpc_address
            << (tls ? (o.tls_client_ca.empty() ? " (TLS, read-only)" : " (mTLS for mutations)")
                    : (local ? " (local plaintext)" : " (INSECURE remote plaintext)"))
            << "; metrics "
            << (impl->metrics_port ? absl::StrCat("on port ", impl->metrics_port, " /metrics")
                                   : std::string("off"))
            << std::endl;
  // From here on, returning an error destroys `cp`, which shuts both servers down.
  std::unique_ptr<ControlPlane> cp(new ControlPlane(std::move(impl)));
  if (!o.ready_file.empty()) {
    std::string tmp = o.ready_file + ".tmp";
    {
      std::ofstream out(tmp);
      out << "{\"grpc\":\"" << cp->grpc_address() << "\",\"metrics_port\":" << cp->metrics_port()
          << ",\"pid\":" << ::getpid() << "}\n";
    }
    if (std::rename(tmp.c_str(), o.ready_file.c_str()) != 0) {
      std::remove(tmp.c_str());
      return absl::InternalError(absl::StrCat("--ready-file: cannot write '", o.ready_file, "'"));
    }
  }
  return cp;
}

void ControlPlane::Shutdown() {
  Impl& i = *impl_;
  if (i.down) return;
  i.down = true;
  {
    std::lock_guard<std::mutex> l(i.mu);
    i.stop = true;
  }
  i.cv.notify_all();
  if (i.health_thread.joinable()) i.health_thread.join();
  // civetweb's listener thread notices the stop flag only when its poll() returns (up to 2 s):
  // stop the exposer on a helper thread and wake that poll with one throw-away connection.
  std::thread stop_exposer([&i] { i.exposer.reset(); });  // no scrape runs past this point
  if (i.metrics_port > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    WakeListener(i.metrics_address, i.metrics_port);
  }
  i.service->Stop();
  // Idle client connections hold the server until the deadline; calls still running then are
  // cancelled.
  i.server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  i.server->Wait();
  stop_exposer.join();
  i.sampler.reset();
}

void WaitForSignal() {
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  while (!g_signalled.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace skbnf::control
