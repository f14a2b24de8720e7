// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/control_plane.h"

#include <arpa/inet.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/server_builder_option.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "prometheus/exposer.h"
#include "server/control/control_service.h"
#include "server/control/health.h"
#include "server/control/limits.h"
#include "server/control/metrics_tls.h"
#include "server/control/tls_reload.h"
#include "server/control/unix_acceptor.h"
#include "server/core/change_log.h"
#include "server/core/pool_share.h"
#include "server/core/stats_sampler.h"
#include "server/core/swap_metrics.h"
#include "server/metrics/metrics.h"

namespace skbnf::control {
namespace {

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

// Keeps ServerBuilder's global plugins (reflection) out of the health-only server: gRPC applies
// a builder's options to its plugin list before the plugins run (ServerBuilder::BuildAndStart).
class NoPlugins : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->clear();
  }
};

// Every method of the health-only server but grpc.health.v1's: UNIMPLEMENTED, saying where the
// control API is. (It is also what lets gRPC build a server whose only service, the default
// health service, is added at Start: ServerBuilder refuses a server without methods.)
class HealthOnlyFallback : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    class Refuse : public grpc::ServerGenericBidiReactor {
     public:
      explicit Refuse(const std::string& method) {
        Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                            absl::StrCat(method,
                                         ": this port (--health-listen) serves grpc.health.v1 "
                                         "only; the control API is on --listen")));
      }
      void OnDone() override { delete this; }
    };
    return new Refuse(ctx->method());
  }
};

}  // namespace

struct ControlPlane::Impl {
  std::vector<std::string> addresses;  // every --listen address, with chosen ports
  int metrics_port = 0;
  std::string metrics_address;  // host part of --metrics-addr ("" = every address)
  SwapMetrics swaps;
  std::shared_ptr<ChangeLog> changes;  // shared with the exposer
  std::shared_ptr<CallLimits> limits;
  UnixPeers unix_peers;  // the unix connections' credentials, by fd
  std::unique_ptr<Access> access;
  std::unique_ptr<UnixAcceptor> unix;
  std::unique_ptr<StatsSampler> sampler;
  std::unique_ptr<Mutations> mutations;  // shared by both services
  std::unique_ptr<Tuner> tuner;
  std::unique_ptr<PauseLeases> leases;           // shared by both services; health reads them
  std::unique_ptr<ControlService> service;       // on `server` (TCP listeners)
  std::unique_ptr<ControlService> unix_service;  // on `unix_server`
  ConfigDriftSlot config_drift;                  // DiffConfig's source (the config watcher)
  std::unique_ptr<grpc::Server> server;
  // The unix-socket listeners' own server: its own threads and quota, so a flood on TCP (any
  // process of the pod can reach loopback) never queues the local operator's calls.
  std::unique_ptr<grpc::Server> unix_server;
  HealthOnlyFallback health_fallback;
  std::unique_ptr<grpc::Server> health_server;  // --health-listen: grpc.health.v1 only
  std::string health_address;
  std::shared_ptr<TlsCertificateWatch> tls_watch;  // TLS only: expiry gauge, reload log
  std::shared_ptr<MetricsCollector> collector;
  std::unique_ptr<prometheus::Exposer> exposer;         // plaintext /metrics
  std::unique_ptr<MetricsTlsServer> metrics_tls;        // or /metrics over HTTPS
  std::unique_ptr<HealthPublisher> health;
  bool down = false;

  void Register(const std::weak_ptr<prometheus::Collectable>& c) {  // nothing when /metrics off
    if (exposer != nullptr) exposer->RegisterCollectable(c, "/metrics");
    if (metrics_tls != nullptr) metrics_tls->RegisterCollectable(c);
  }
};

ControlPlane::ControlPlane(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ControlPlane::~ControlPlane() { Shutdown(); }
const std::string& ControlPlane::grpc_address() const { return impl_->addresses.front(); }
const std::vector<std::string>& ControlPlane::addresses() const { return impl_->addresses; }
int ControlPlane::metrics_port() const { return impl_->metrics_port; }
const std::string& ControlPlane::health_address() const { return impl_->health_address; }

namespace {

// The control API's server over every --listen address: TCP ports through gRPC, unix sockets
// through the UnixAcceptor (started once the server runs). Fills impl.addresses.
absl::Status StartControlServer(ControlPlane::Impl& impl, const ControlOptions& o,
                                const Listeners& ls) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  ApplyServerLimits(o.limits, builder);
  std::vector<int> ports(ls.listeners.size(), 0);
  bool unix_listeners = false;
  for (size_t i = 0; i < ls.listeners.size(); ++i) {
    const Listener& l = ls.listeners[i];
    if (l.kind == Listener::Kind::kTcp) {
      builder.AddListeningPort(l.address, l.credentials, &ports[i]);
    } else {
      unix_listeners = true;
    }
  }
  builder.RegisterService(impl.service.get());
  absl::StatusOr<std::unique_ptr<UnixAcceptor>> unix =
      UnixAcceptor::Bind(ls.listeners, impl.unix_peers, o.limits.unix_connections);
  if (!unix.ok()) return unix.status();
  impl.unix = *std::move(unix);
  impl.server = builder.BuildAndStart();
  if (impl.server == nullptr) {
    return absl::UnavailableError(absl::StrCat("--listen: cannot listen on '", o.listen, "'"));
  }
  if (unix_listeners) {
    grpc::ServerBuilder ub;
    ApplyServerLimits(o.limits, ub);
    ub.RegisterService(impl.unix_service.get());
    impl.unix_server = ub.BuildAndStart();
    if (impl.unix_server == nullptr) {
      return absl::UnavailableError(absl::StrCat("--listen: cannot serve '", o.listen, "'"));
    }
  }
  for (size_t i = 0; i < ls.listeners.size(); ++i) {
    const Listener& l = ls.listeners[i];
    if (l.kind != Listener::Kind::kTcp) {
      impl.addresses.push_back(l.address);
      continue;
    }
    if (ports[i] == 0) {
      return absl::UnavailableError(absl::StrCat("--listen: cannot listen on '", l.address, "'"));
    }
    impl.addresses.push_back(
        absl::StrCat(l.address.substr(0, l.address.rfind(':')), ":", ports[i]));
  }
  if (impl.unix_server != nullptr) impl.unix->Start(impl.unix_server.get());
  return absl::OkStatus();
}

absl::Status StartHealthServer(ControlPlane::Impl& impl, const ControlOptions& o) {
  if (o.health_listen.empty()) return absl::OkStatus();
  grpc::ServerBuilder hb;
  ApplyHealthLimits(o.limits, hb);
  hb.SetOption(std::make_unique<NoPlugins>());
  hb.RegisterCallbackGenericService(&impl.health_fallback);
  int health_port = 0;
  hb.AddListeningPort(o.health_listen, grpc::InsecureServerCredentials(), &health_port);
  impl.health_server = hb.BuildAndStart();  // the default health service and nothing else
  if (impl.health_server == nullptr || health_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("--health-listen: cannot listen on '", o.health_listen, "'"));
  }
  impl.health_address =
      absl::StrCat(o.health_listen.substr(0, o.health_listen.rfind(':')), ":", health_port);
  return absl::OkStatus();
}

// /metrics over HTTPS (metrics_tls.h: why not the Exposer's civetweb).
absl::Status StartMetricsTls(ControlPlane::Impl& impl, const ControlOptions& o) {
  absl::StatusOr<std::unique_ptr<MetricsTlsServer>> s = MetricsTlsServer::Start(
      o.metrics_addr,
      TlsFiles{o.metrics_tls_cert, o.metrics_tls_key, o.metrics_tls_client_ca},
      o.tls_reload_interval);
  if (!s.ok()) return s.status();
  impl.metrics_tls = *std::move(s);
  impl.metrics_port = impl.metrics_tls->port();
  return absl::OkStatus();
}

absl::Status StartExposer(ControlPlane::Impl& impl, const ControlOptions& o, Backend& backend) {
  if (o.metrics_addr.empty() || o.metrics_addr == "off") return absl::OkStatus();
  // civetweb syntax: "port" binds every IPv4 address, "ip:port" one of them.
  std::string bind =
      absl::StartsWith(o.metrics_addr, ":") ? o.metrics_addr.substr(1) : o.metrics_addr;
  if (!o.metrics_tls_cert.empty()) {
    if (absl::Status s = StartMetricsTls(impl, o); !s.ok()) return s;
  } else {
    try {
      impl.exposer = std::make_unique<prometheus::Exposer>(bind, 2);
    } catch (const std::exception& e) {
      return absl::UnavailableError(
          absl::StrCat("--metrics-addr: cannot listen on '", o.metrics_addr, "': ", e.what()));
    }
    impl.metrics_address =
        bind.find(':') == std::string::npos ? "" : bind.substr(0, bind.rfind(':'));
    std::vector<int> ports = impl.exposer->GetListeningPorts();
    impl.metrics_port = ports.empty() ? 0 : ports[0];
  }
  impl.collector = std::make_shared<MetricsCollector>(backend, *impl.sampler, impl.swaps,
                                                      &impl.service->tuner());
  for (const std::weak_ptr<prometheus::Collectable>& c :
       std::initializer_list<std::weak_ptr<prometheus::Collectable>>{
           impl.collector, impl.changes, impl.limits}) {
    impl.Register(c);
  }
  if (impl.tls_watch != nullptr) impl.Register(impl.tls_watch);
  return absl::OkStatus();
}

absl::Status WriteReadyFile(const ControlPlane& cp, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "{\"grpc\":\"" << cp.grpc_address() << "\",\"listen\":[";
    for (size_t i = 0; i < cp.addresses().size(); ++i) {
      out << (i ? "," : "") << "\"" << cp.addresses()[i] << "\"";
    }
    out << "],\"metrics_port\":" << cp.metrics_port() << ",\"health\":\"" << cp.health_address()
        << "\",\"pid\":" << ::getpid() << "}\n";
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::InternalError(absl::StrCat("--ready-file: cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ControlPlane>> ControlPlane::Start(Backend& backend,
                                                                  const ControlOptions& o) {
  absl::StatusOr<Listeners> listeners = PrepareListeners(o);  // before anything listens
  if (!listeners.ok()) return listeners.status();
  // The strategy the data plane started with is held to the rule SetStrategy applies
  // (pool_share.h), so a daemon never serves with a pool its per-core layers could hoard.
  if (const Info info = backend.GetInfo(); !info.pool.native) {
    absl::Status share = CheckPoolShare(backend.GetStrategy(), info, backend.ListPorts());
    if (!share.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the starting strategy (--strategy, or strategy in --config): ", share.message()));
    }
  }
  absl::StatusOr<std::shared_ptr<ChangeLog>> changes = ChangeLog::Open(o.audit_log);
  if (!changes.ok()) return changes.status();

  auto impl = std::make_unique<Impl>();
  impl->changes = *std::move(changes);
  impl->sampler = std::make_unique<StatsSampler>(backend, std::chrono::milliseconds(250),
                                                 std::chrono::milliseconds(1000),
                                                 o.buffer_census_every);
  impl->limits = std::make_shared<CallLimits>(o.limits);
  impl->access = std::make_unique<Access>(listeners->access, &impl->unix_peers);
  impl->mutations = std::make_unique<Mutations>(backend, impl->swaps, *impl->changes);
  impl->tuner = std::make_unique<Tuner>(*impl->mutations);
  impl->leases = std::make_unique<PauseLeases>(*impl->mutations);
  for (std::unique_ptr<ControlService>* s : {&impl->service, &impl->unix_service}) {
    *s = std::make_unique<ControlService>(backend, *impl->sampler, impl->swaps, *impl->access,
                                          *impl->changes, *impl->limits, *impl->mutations,
                                          *impl->tuner, *impl->leases);
    (*s)->set_config_drift(&impl->config_drift);
  }
  if (!o.tls_cert.empty() || !o.metrics_tls_cert.empty()) {  // logs every certificate change
    impl->tls_watch = std::make_shared<TlsCertificateWatch>(
        TlsFiles{o.tls_cert, o.tls_key, o.tls_client_ca}, o.tls_reload_interval,
        TlsFiles{o.metrics_tls_cert, o.metrics_tls_key, o.metrics_tls_client_ca});
  }
  // From here on, returning an error destroys `cp`, which shuts every server down.
  std::unique_ptr<ControlPlane> cp(new ControlPlane(std::move(impl)));
  Impl& i = *cp->impl_;
  if (absl::Status s = StartControlServer(i, o, *listeners); !s.ok()) return s;
  if (absl::Status s = StartHealthServer(i, o); !s.ok()) return s;
  if (absl::Status s = StartExposer(i, o, backend); !s.ok()) return s;
  std::vector<grpc::Server*> health_servers = {i.server.get()};
  if (i.unix_server != nullptr) health_servers.push_back(i.unix_server.get());
  if (i.health_server != nullptr) health_servers.push_back(i.health_server.get());
  i.health = std::make_unique<HealthPublisher>(backend, std::move(health_servers), HealthTiming{},
                                               [&i] { return i.leases->NotReady(); });

  for (const std::string& w : listeners->warnings) std::cerr << "skbnf-control: " << w << "\n";
  for (size_t k = 0; k < i.addresses.size(); ++k) {
    std::cerr << "skbnf-control: gRPC on " << i.addresses[k] << " "
              << listeners->listeners[k].description << "\n";
  }
  std::cerr << "skbnf-control: roles: "
            << (o.roles.empty() ? std::string("none bound (--roles)") : o.roles)
            << "; unix-socket peers with uid " << listeners->access.owner_uid
            << " (skbnfd's) are admin unless --roles names it; audit trail to "
            << (o.audit_log == "-" ? std::string("stderr") : o.audit_log)
            << (i.health_address.empty()
                    ? std::string()
                    : absl::StrCat("; health (plaintext, grpc.health.v1 only) on ",
                                   i.health_address))
            << "; metrics "
            << (i.metrics_port ? absl::StrCat("on ", o.metrics_addr.substr(
                                                         0, o.metrics_addr.rfind(':')),
                                              ":", i.metrics_port, " /metrics",
                                              o.metrics_tls_cert.empty() ? " (plaintext HTTP)"
                                              : o.metrics_tls_client_ca.empty()
                                                  ? " (HTTPS)"
                                                  : " (HTTPS, client certificate required)")
                               : std::string("off"))
            << std::endl;
  if (absl::Status s = WriteReadyFile(*cp, o.ready_file); !s.ok()) return s;
  return cp;
}

void ControlPlane::Mutate(ChangeSource source, const std::function<void(Change&)>& f) {
  impl_->service->Mutate(source, f);
}

ConfigDriftSlot& ControlPlane::config_drift() { return impl_->config_drift; }

void ControlPlane::AddMetrics(const std::weak_ptr<prometheus::Collectable>& c) {
  impl_->Register(c);
}

void ControlPlane::Shutdown() {
  Impl& i = *impl_;
  if (i.down) return;
  i.down = true;
  i.health.reset();
  i.leases.reset();  // no lease expires into a stopping data plane
  // civetweb's listener thread notices the stop flag only when its poll() returns (up to 2 s):
  // stop the exposer on a helper thread and wake that poll with one throw-away connection.
  const bool civetweb = i.exposer != nullptr;  // read before the helper resets it
  std::thread stop_exposer([&i] {  // no scrape runs past this point
    i.exposer.reset();
    i.metrics_tls.reset();
  });
  if (i.metrics_port > 0 && civetweb) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    WakeListener(i.metrics_address, i.metrics_port);
  }
  if (i.unix != nullptr) i.unix->Stop();  // no new unix connections
  if (i.service != nullptr) i.service->Stop();
  if (i.unix_service != nullptr) i.unix_service->Stop();
  // Idle client connections hold the server until the deadline; calls still running then are
  // cancelled.
  const auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(300);
  if (i.health_server != nullptr) i.health_server->Shutdown(deadline);
  for (std::unique_ptr<grpc::Server>* s : {&i.server, &i.unix_server}) {
    if (*s != nullptr) (*s)->Shutdown(deadline);
  }
  for (std::unique_ptr<grpc::Server>* s : {&i.server, &i.unix_server}) {
    if (*s != nullptr) (*s)->Wait();
  }
  if (i.health_server != nullptr) i.health_server->Wait();
  stop_exposer.join();
  i.sampler.reset();
}

}  // namespace skbnf::control
