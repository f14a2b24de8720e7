// SPDX-License-Identifier: BSD-3-Clause
#include "server/control/limits.h"

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
  if (absl::Status s = Range("watch-min-interval-ms", o.watch_min_interval_ms, 10, 60000,
                             d.watch_min_interval_ms);
      !s.ok()) {
    return s;
  }
  return Range("audit-min-interval-ms", o.audit_min_interval_ms, 0, 3600000,
               d.audit_min_interval_ms);
}

CallLimits::CallLimits(const LimitOptions& o) : o_(o) {
  for (const char* reason : {"streams_per_client", "streams_total", "interval"}) {
    rejected_[{"WatchStats", reason}] = 0;
  }
  rejected_[{"AuditPool", "rate"}] = 0;
}

CallLimits::StreamSlot::~StreamSlot() {
  if (limits_ != nullptr) limits_->Release(client_);
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
                                       StreamSlot* slot) {
  int64_t mine = 0;
  {
    absl::MutexLock l(&mu_);
    mine = streams_by_client_[client];
    if (mine < o_.watch_streams_per_client && streams_ < o_.watch_streams_total) {
      ++streams_by_client_[client];
      ++streams_;
      slot->limits_ = this;
      slot->client_ = client;
      return grpc::Status::OK;
    }
    if (mine == 0) streams_by_client_.erase(client);
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

void CallLimits::Release(const std::string& client) {
  absl::MutexLock l(&mu_);
  auto it = streams_by_client_.find(client);
  if (it != streams_by_client_.end() && --it->second <= 0) streams_by_client_.erase(it);
  --streams_;
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
