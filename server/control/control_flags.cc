// SPDX-License-Identifier: BSD-3-Clause
// Flags of the control plane (gRPC listener, TLS, Prometheus endpoint, ready file): the
// "control API and TLS" and "metrics" topics of --help (server/daemon/flag_help.cc: every new
// flag needs its line there, tests/cli holds it). server/control/listener.h says why the listener
// rules are as they are.
#include <algorithm>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "server/control/control_plane.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Where the gRPC control API listens: one address or several, comma-separated, each "
          "host:port (port 0 picks a free one), unix:/path (0660; peers identified by uid/gid) "
          "or unix-abstract:name. A TCP address other than loopback needs --tls-cert/--tls-key "
          "(or --insecure-remote). Loopback TCP grants no role (see --roles, --loopback-role).");
ABSL_FLAG(std::string, roles, "",
          "Who may do what: SUBJECT=ROLE[,SUBJECT=ROLE...]. SUBJECT: dns:NAME or uri:URI (a "
          "verified client certificate's DNS or URI SAN, e.g. "
          "uri:spiffe://cluster.local/ns/ops/sa/cli), uid:N or gid:N (a unix-socket peer, by "
          "SO_PEERCRED). ROLE: read (Get/List/Watch, validate-only), operate (+ SetStrategy, "
          "TuneStrategy, AuditPool, Pause/ResumeWorker) or admin (+ routes). Unix-socket peers "
          "with skbnfd's own uid are admin unless a uid: entry names that uid.");
ABSL_FLAG(std::string, loopback_role, "",
          "Role of every TCP client on loopback (none, read, operate, admin); logged as a "
          "warning at start-up. Empty: none, except admin in skbnfd's demo. In Kubernetes "
          "loopback is every container of the pod, kubectl port-forward and a sidecar proxy.");
ABSL_FLAG(std::string, audit_log, "-",
          "Audit trail, JSON lines: a begin record before every change (flushed first), an end "
          "record after, denials throttled with counts. - = stderr; else a file appended to.");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate (chain) for the gRPC listener.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert.");
ABSL_FLAG(int64_t, tls_reload_interval, 10,
          "Seconds between re-reads of --tls-cert, --tls-key and --tls-client-ca (1..86400): a "
          "rotated certificate (cert-manager, a Secret volume's ..data swap) is served to new "
          "connections within this time, without a restart.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle the TLS listeners verify client certificates against (mTLS; it may be "
          "another CA than the server certificate's issuer). Only a verified certificate named "
          "in --roles gets a role.");
ABSL_FLAG(std::string, tls_client_names, "",
          "Deprecated: each NAME is read as --roles=dns:NAME=admin (uri:NAME=admin when it has a "
          "scheme), said at start-up. Write --roles.");
ABSL_FLAG(bool, insecure_remote, false,
          "Allow a plaintext gRPC listener on a non-loopback address (or an abstract unix "
          "socket). Remote clients get no role on it. For isolated labs only.");
ABSL_FLAG(int64_t, grpc_threads, 32,
          "Most threads the control API's gRPC server may use (grpc::ResourceQuota, 4..1024): "
          "a call in flight holds one.");
ABSL_FLAG(int64_t, grpc_memory_mb, 128,
          "Memory the control API's gRPC server may use (grpc::ResourceQuota, 16..65536 MiB).");
ABSL_FLAG(int64_t, grpc_streams_per_connection, 16,
          "Most concurrent calls on one connection (HTTP/2 max concurrent streams, 1..1024).");
ABSL_FLAG(int64_t, grpc_max_connection_age, 1800,
          "Seconds a client connection may live (10..604800); then GOAWAY and 60 s for its "
          "calls to finish.");
ABSL_FLAG(int64_t, grpc_max_message_bytes, 1 << 20,
          "Largest request message accepted (4096..1073741824 bytes).");
ABSL_FLAG(int64_t, unix_connections, 64,
          "Most connections open at once on each unix-socket listener (1..65536); more are "
          "closed at once.");
ABSL_FLAG(int64_t, calls_per_identity, 16,
          "Most unary reads one identity (a uid, a certificate, all of loopback) may have in "
          "flight (1..4096); more: RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, mutations_per_identity, 4,
          "Most changes one identity may have in flight or waiting for the change lock "
          "(1..1024); more: RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, watch_streams_per_client, 8,
          "Most WatchStats streams one identity may hold open (1..1024); more: "
          "RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, watch_streams_total, 16,
          "Most WatchStats streams open at once, all identities together (1..4096, at least "
          "--watch-streams-per-client, below --grpc-threads).");
ABSL_FLAG(int64_t, watch_min_interval_ms, 50,
          "Shortest WatchStats interval accepted (10..60000 ms); shorter: RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, audit_min_interval_ms, 200,
          "AuditPool parks every worker: at most one call per this many ms, all clients "
          "together (0..3600000; 0 = no limit).");
ABSL_FLAG(std::string, health_listen, "",
          "host:port of a plaintext listener serving grpc.health.v1 only (services liveness, "
          "readiness; \"\" = readiness) for the kubelet's gRPC probes, e.g. 0.0.0.0:50052. "
          "Empty: none (health is also served on --listen).");
ABSL_FLAG(absl::Duration, buffer_census_every, absl::Seconds(2),
          "While the strategy carries 'track', take a census of the buffers in flight this often "
          "(100ms..1h): each one flushes the per-core layers as a reclaim does; its ages are "
          "what GetBufferAges, skbnfctl buffers --ages and skbnf_pool_inflight_age_seconds show.");
ABSL_FLAG(std::string, metrics_addr, "",
          "Prometheus endpoint [host]:port, served at /metrics (port 0 picks a free one; :PORT "
          "binds every address); 'off' disables it. Not given: 127.0.0.1:9478 (skbnfd's demo: "
          ":9478). In a pod: $(POD_IP):9478.");
ABSL_FLAG(std::string, metrics_tls_cert, "",
          "PEM certificate (chain) to serve /metrics over HTTPS with (and --metrics-tls-key); "
          "re-read every --tls-reload-interval. Not given: plaintext HTTP.");
ABSL_FLAG(std::string, metrics_tls_key, "", "PEM private key of --metrics-tls-cert.");
ABSL_FLAG(std::string, metrics_tls_client_ca, "",
          "PEM CA bundle: /metrics then requires a client certificate it verifies (mTLS); "
          "scrapers without one fail the handshake.");
ABSL_FLAG(std::string, ready_file, "",
          "When set, written once the servers listen: {\"grpc\":ADDR,\"metrics_port\":N,"
          "\"health\":ADDR (\"\" without --health-listen),\"pid\":P}.");

namespace skbnf::control {

ControlOptions OptionsFromFlags(bool demo) {
  ControlOptions o;
  o.demo = demo;
  o.listen = absl::GetFlag(FLAGS_listen);
  o.roles = absl::GetFlag(FLAGS_roles);
  o.loopback_role = absl::GetFlag(FLAGS_loopback_role);
  o.audit_log = absl::GetFlag(FLAGS_audit_log);
  o.buffer_census_every =
      std::chrono::milliseconds(absl::ToInt64Milliseconds(absl::GetFlag(FLAGS_buffer_census_every)));
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
  o.limits.grpc_threads = absl::GetFlag(FLAGS_grpc_threads);
  o.limits.grpc_memory_mb = absl::GetFlag(FLAGS_grpc_memory_mb);
  o.limits.streams_per_connection = absl::GetFlag(FLAGS_grpc_streams_per_connection);
  o.limits.max_connection_age_s = absl::GetFlag(FLAGS_grpc_max_connection_age);
  o.limits.max_message_bytes = absl::GetFlag(FLAGS_grpc_max_message_bytes);
  o.limits.unix_connections =
      static_cast<int>(std::clamp<int64_t>(absl::GetFlag(FLAGS_unix_connections), 0, 1 << 20));
  o.limits.calls_per_identity = absl::GetFlag(FLAGS_calls_per_identity);
  o.limits.mutations_per_identity = absl::GetFlag(FLAGS_mutations_per_identity);
  o.limits.watch_streams_per_client = absl::GetFlag(FLAGS_watch_streams_per_client);
  o.limits.watch_streams_total = absl::GetFlag(FLAGS_watch_streams_total);
  o.limits.watch_min_interval_ms = absl::GetFlag(FLAGS_watch_min_interval_ms);
  o.limits.audit_min_interval_ms = absl::GetFlag(FLAGS_audit_min_interval_ms);
  o.metrics_addr = absl::GetFlag(FLAGS_metrics_addr);
  // Not given: this host only; the demo keeps every address (a container's published port).
  if (o.metrics_addr.empty()) o.metrics_addr = demo ? ":9478" : "127.0.0.1:9478";
  o.metrics_tls_cert = absl::GetFlag(FLAGS_metrics_tls_cert);
  o.metrics_tls_key = absl::GetFlag(FLAGS_metrics_tls_key);
  o.metrics_tls_client_ca = absl::GetFlag(FLAGS_metrics_tls_client_ca);
  o.ready_file = absl::GetFlag(FLAGS_ready_file);
  return o;
}

}  // namespace skbnf::control
