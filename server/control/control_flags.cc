// SPDX-License-Identifier: BSD-3-Clause
// Flags of the control plane (gRPC listener, TLS, Prometheus endpoint, ready file): the
// "control API and TLS" and "metrics" topics of --help (server/daemon/flag_help.cc: every new
// flag needs its line there, tests/cli holds it). server/control/listener.h says why the listener
// rules are as they are.
#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "server/control/control_plane.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC listen address: host:port (port 0 picks a free one), unix:/path or "
          "unix-abstract:name. Anything but loopback or a unix:/path socket needs "
          "--tls-cert/--tls-key (or --insecure-remote).");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate (chain) for the gRPC listener.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert.");
ABSL_FLAG(int64_t, tls_reload_interval, 10,
          "Seconds between re-reads of --tls-cert, --tls-key and --tls-client-ca (1..86400): a "
          "rotated certificate (cert-manager, a Secret volume's ..data swap) is served to new "
          "connections within this time, without a restart.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: on a TLS listener, only clients presenting a certificate it signed may "
          "call mutating RPCs (mTLS). Without it a TLS listener is read-only.");
ABSL_FLAG(std::string, tls_client_names, "",
          "Comma-separated names: with --tls-client-ca, only clients whose certificate carries "
          "one of them as a subject alternative name (DNS, URI, e-mail or IP) may change the "
          "data plane; other verified clients may read. Empty: any certificate the CA signed.");
ABSL_FLAG(bool, insecure_remote, false,
          "Allow a plaintext gRPC listener on a non-loopback address (or an abstract unix "
          "socket). Reads are open to anyone who can connect; changes only to loopback clients. "
          "For isolated labs only.");
ABSL_FLAG(int64_t, watch_streams_per_client, 8,
          "Most WatchStats streams one client may hold open (1..1024); more: RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, watch_streams_total, 64,
          "Most WatchStats streams open at once, all clients together (1..4096, at least "
          "--watch-streams-per-client).");
ABSL_FLAG(int64_t, watch_min_interval_ms, 50,
          "Shortest WatchStats interval accepted (10..60000 ms); shorter: RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, audit_min_interval_ms, 200,
          "AuditPool parks every worker: at most one call per this many ms, all clients "
          "together (0..3600000; 0 = no limit).");
ABSL_FLAG(std::string, health_listen, "",
          "host:port of a plaintext listener serving grpc.health.v1 only (services liveness, "
          "readiness; \"\" = readiness) for the kubelet's gRPC probes, e.g. 0.0.0.0:50052. "
          "Empty: none (health is also served on --listen).");
ABSL_FLAG(std::string, metrics_addr, ":9478",
          "Prometheus endpoint [host]:port, served at /metrics (port 0 picks a free one); "
          "'off' disables it.");
ABSL_FLAG(std::string, ready_file, "",
          "When set, written once the servers listen: {\"grpc\":ADDR,\"metrics_port\":N,"
          "\"health\":ADDR (\"\" without --health-listen),\"pid\":P}.");

namespace skbnf::control {

ControlOptions OptionsFromFlags() {
  ControlOptions o;
  o.listen = absl::GetFlag(FLAGS_listen);
  o.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key = absl::GetFlag(FLAGS_tls_key);
  o.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  o.tls_reload_interval = std::chrono::seconds(absl::GetFlag(FLAGS_tls_reload_interval));
  o.health_listen = absl::GetFlag(FLAGS_health_listen);
  for (absl::string_view n :
       absl::StrSplit(absl::GetFlag(FLAGS_tls_client_names), ',', absl::SkipWhitespace())) {
    o.tls_client_names.emplace_back(n);
  }
  o.insecure_remote = absl::GetFlag(FLAGS_insecure_remote);
  o.limits.watch_streams_per_client = absl::GetFlag(FLAGS_watch_streams_per_client);
  o.limits.watch_streams_total = absl::GetFlag(FLAGS_watch_streams_total);
  o.limits.watch_min_interval_ms = absl::GetFlag(FLAGS_watch_min_interval_ms);
  o.limits.audit_min_interval_ms = absl::GetFlag(FLAGS_audit_min_interval_ms);
  o.metrics_addr = absl::GetFlag(FLAGS_metrics_addr);
  o.ready_file = absl::GetFlag(FLAGS_ready_file);
  return o;
}

}  // namespace skbnf::control
