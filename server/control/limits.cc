// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/limits.h"

#include <grpcpp/resource_quota.h>

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "server/core/metric_families.h"

namespace skbnf::control {
namespace {

absl::Status Range(absl::string_view flag, int64_t v, int64_t lo, int64_t hi, int64_t def) {
  if (v >= lo && v <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", v, " is out of range: write --",
                                                 flag, "=N with N in [", lo, ", ", hi,
                                                 "] (default ", def, ")"));
}

}  // namespace

absl::Status CheckLimitOptions(const LimitOptions& o) {
  const LimitOptions d;
  struct R {
    const char* flag;
    int64_t v, lo, hi, def;
  };
  for (const R& r : {R{"grpc-threads", o.grpc_threads, 4, 1024, d.grpc_threads},
                     R{"grpc-memory-mb", o.grpc_memory_mb, 16, 65536, d.grpc_memory_mb},
                     R{"grpc-streams-per-connection", o.streams_per_connection, 1, 1024,
                       d.streams_per_connection},
                     R{"grpc-max-connection-age", o.max_connection_age_s, 10, 86400 * 7,
                       d.max_connection_age_s},
                     R{"grpc-max-message-bytes", o.max_message_bytes, 4096, 1 << 30,
                       d.max_message_bytes},
                     R{"unix-connections", o.unix_connections, 1, 65536, d.unix_connections},
                     R{"calls-per-identity", o.calls_per_identity, 1, 4096, d.calls_per_identity},
                     R{"mutations-per-identity", o.mutations_per_identity, 1, 1024,
                       d.mutations_per_identity}}) {
    if (absl::Status s = Range(r.flag, r.v, r.lo, r.hi, r.def); !s.ok()) return s;
  }
  if (absl::Status s = Range("watch-streams-per-client", o.watch_streams_per_client, 1, 1024,
                             d.watch_streams_per_client);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          Range("watch-streams-total", o.watch_streams_total, 1, 4096, d.watch_streams_total);
      !s.ok()) {
    return s;
  }
  if (o.watch_streams_total < o.watch_streams_per_client) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--watch-streams-total=", o.watch_streams_total, " is below --watch-streams-per-client=",
        o.watch_streams_per_client, ": write --watch-streams-total=", o.watch_streams_per_client,
        " or more, or lower --watch-streams-per-client"));
  }
  if (o.watch_streams_total >= o.grpc_threads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--watch-streams-total=", o.watch_streams_total, " must be below --grpc-threads=",
        o.grpc_threads, " (each stream holds a thread; unary calls need the rest): write "
        "--grpc-threads=", o.watch_streams_total * 2, " or lower --watch-streams-total"));
  }
  if (absl::Status s = Range("watch-min-interval-ms", o.watch_min_interval_ms, 10, 60000,
                             d.watch_min_interval_ms);
      !s.ok()) {
    return s;
  }
  return Range("audit-min-interval-ms", o.audit_min_interval_ms, 0, 3600000,
               d.audit_min_interval_ms);
}

void ApplyServerLimits(const LimitOptions& o, grpc::ServerBuilder& b) {
  grpc::ResourceQuota quota("skbnf-control");
  quota.SetMaxThreads(static_cast<int>(o.grpc_threads));
  quota.Resize(static_cast<size_t>(o.grpc_memory_mb) << 20);
  b.SetResourceQuota(quota);
  // gRPC sets SO_REUSEPORT by default: a second daemon on the same port would start and
  // silently share the clients. One control endpoint per port.
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  b.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(o.streams_per_connection));
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                       static_cast<int>(std::min<int64_t>(o.max_connection_age_s * 1000, INT32_MAX)));
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 60000);
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 300000);
  b.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10000);
  b.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, 16 << 10);
  b.SetMaxReceiveMessageSize(static_cast<int>(o.max_message_bytes));
  // Keepalive enforcement: a client pinging without data more often than every 10 s gets a
  // strike; two strikes and the connection is closed (GOAWAY too_many_pings). The server pings
  // idle connections every 60 s and drops one that does not answer in 20 s: a dead client's
  // connection (and its pause lease's renewals) does not linger.
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60000);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
}

void ApplyHealthLimits(const LimitOptions& o, grpc::ServerBuilder& b) {
  grpc::ResourceQuota quota("skbnf-health");
  quota.SetMaxThreads(4);
  quota.Resize(8 << 20);
  b.SetResourceQuota(quota);
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  b.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 4);
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                       static_cast<int>(std::min<int64_t>(o.max_connection_age_s * 1000, INT32_MAX)));
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 10000);
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 60000);
  b.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 5000);
  b.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, 8 << 10);
  b.SetMaxReceiveMessageSize(4096);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
}

CallLimits::CallLimits(const LimitOptions& o) : o_(o) {
  for (const char* reason : {"streams_per_client", "streams_total", "interval"}) {
    rejected_[{"WatchStats", reason}] = 0;
  }
  rejected_[{"AuditPool", "rate"}] = 0;
}

CallLimits::Slot::~Slot() {
  if (limits_ != nullptr) limits_->Release(kind_, client_);
}

grpc::Status CallLimits::AcquireCall(absl::string_view rpc, const std::string& client, Kind kind,
                                     Slot* slot) {
  const int64_t max = kind == Kind::kMutation ? o_.mutations_per_identity : o_.calls_per_identity;
  int64_t mine = 0;
  {
    absl::MutexLock l(&mu_);
    std::map<std::string, int64_t>& m = by_client_[static_cast<int>(kind)];
    mine = m[client];
    if (mine < max) {
      ++m[client];
      slot->limits_ = this;
      slot->kind_ = kind;
      slot->client_ = client;
      return grpc::Status::OK;
    }
  }
  const bool change = kind == Kind::kMutation;
  return Reject(rpc, change ? "mutations_per_client" : "calls_per_client",
                absl::StrCat(rpc, ": ", client, " already has ", mine,
                             change ? " changes in flight or waiting for the change lock"
                                    : " calls in flight",
                             ", the most one identity may have (",
                             change ? "--mutations-per-identity" : "--calls-per-identity",
                             "); wait for one to finish"));
}

grpc::Status CallLimits::Reject(absl::string_view rpc, absl::string_view reason,
                                std::string message) {
  {
    absl::MutexLock l(&mu_);
    ++rejected_[{std::string(rpc), std::string(reason)}];
  }
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, std::move(message));
}

grpc::Status CallLimits::AcquireStream(absl::string_view rpc, const std::string& client,
                                       Slot* slot) {
  int64_t mine = 0;
  {
    absl::MutexLock l(&mu_);
    std::map<std::string, int64_t>& m = by_client_[static_cast<int>(Kind::kStream)];
    mine = m[client];
    if (mine < o_.watch_streams_per_client && streams_ < o_.watch_streams_total) {
      ++m[client];
      ++streams_;
      slot->limits_ = this;
      slot->kind_ = Kind::kStream;
      slot->client_ = client;
      return grpc::Status::OK;
    }
    if (mine == 0) m.erase(client);
  }
  if (mine >= o_.watch_streams_per_client) {
    return Reject(rpc, "streams_per_client",
                  absl::StrCat(rpc, ": this client (", client, ") already has ", mine,
                               " streams open, the most one client may have "
                               "(--watch-streams-per-client); close one first"));
  }
  return Reject(rpc, "streams_total",
                absl::StrCat(rpc, ": the server already serves ", o_.watch_streams_total,
                             " streams, the most it serves (--watch-streams-total); retry later"));
}

void CallLimits::Release(Kind kind, const std::string& client) {
  absl::MutexLock l(&mu_);
  std::map<std::string, int64_t>& m = by_client_[static_cast<int>(kind)];
  auto it = m.find(client);
  if (it != m.end() && --it->second <= 0) m.erase(it);
  if (kind == Kind::kStream) --streams_;
}

grpc::Status CallLimits::CheckInterval(absl::string_view rpc, uint32_t interval_ms) {
  if (interval_ms >= o_.watch_min_interval_ms) return grpc::Status::OK;
  return Reject(rpc, "interval",
                absl::StrCat("interval_ms: ", interval_ms, " is below this server's minimum of ",
                             o_.watch_min_interval_ms, " ms (--watch-min-interval-ms)"));
}

grpc::Status CallLimits::Admit(absl::string_view rpc, std::chrono::milliseconds min_interval) {
  if (min_interval.count() <= 0) return grpc::Status::OK;
  const auto now = std::chrono::steady_clock::now();
  std::chrono::milliseconds wait{0};
  {
    absl::MutexLock l(&mu_);
    auto [it, first] = last_admitted_.try_emplace(std::string(rpc), now);
    if (first || now - it->second >= min_interval) {
      it->second = now;
      return grpc::Status::OK;
    }
    wait = std::chrono::duration_cast<std::chrono::milliseconds>(it->second + min_interval - now) +
           std::chrono::milliseconds(1);
  }
  return Reject(rpc, "rate",
                absl::StrCat(rpc, ": at most one call per ", min_interval.count(),
                             " ms across all clients; retry in ", wait.count(), " ms"));
}

uint64_t CallLimits::Rejected(const std::string& rpc, const std::string& reason) const {
  absl::MutexLock l(&mu_);
  auto it = rejected_.find({rpc, reason});
  return it == rejected_.end() ? 0 : it->second;
}

std::vector<prometheus::MetricFamily> CallLimits::Collect() const {
  prometheus::MetricFamily f = NewFamily(metric::kControlRejectedTotal);
  prometheus::MetricFamily g = NewFamily(metric::kControlWatchStreams);
  absl::MutexLock l(&mu_);
  for (const auto& [key, n] : rejected_) {
    prometheus::ClientMetric m;
    m.label = {{"rpc", key.first}, {"reason", key.second}};
    m.counter.value = static_cast<double>(n);
    f.metric.push_back(std::move(m));
  }
  prometheus::ClientMetric m;
  m.gauge.value = static_cast<double>(streams_);
  g.metric.push_back(std::move(m));
  return {std::move(f), std::move(g)};
}

}  // namespace skbnf::control
