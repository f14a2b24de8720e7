// SPDX-License-Identifier: BSD-3-Clause
// CallLimits: bounds on what one identity, and all of them, may ask of the control plane, and
// the gRPC server's own limits (ApplyServerLimits). The control plane shares skbnfd's process
// with the data plane: no caller may exhaust its threads, memory or mutation lock.
//
// An identity is what the transport proved (access.h: Caller::ClientKey): a unix-socket peer's
// uid, a certificate, or "loopback" for every loopback TCP client together - never an address a
// client can multiply. Every refusal is RESOURCE_EXHAUSTED saying which limit and which flag
// raises it, counted in skbnf_control_rejected_total{rpc,reason}.
//
//   limit                                        default  flag
//   gRPC threads (grpc::ResourceQuota)           32       --grpc-threads
//   gRPC memory (grpc::ResourceQuota)            128 MiB  --grpc-memory-mb
//   concurrent streams per connection            16       --grpc-streams-per-connection
//   connection age (then GOAWAY; +60 s grace)    1800 s   --grpc-max-connection-age
//   idle connection closed after                 300 s    (fixed)
//   largest request message                      1 MiB    --grpc-max-message-bytes
//   handshake (TLS, HTTP/2 preface) must end in  10 s     (fixed)
//   keepalive: pings more often than every 10 s  GOAWAY   (fixed: min_recv_ping_interval,
//     without data are strikes, 2 strikes close             max_ping_strikes)
//   open connections per unix listener           64       --unix-connections
//   in-flight unary reads per identity           16       --calls-per-identity
//   changes in flight or queued per identity     4        --mutations-per-identity
//   WatchStats streams per identity              8        --watch-streams-per-client
//   WatchStats streams in all                    16       --watch-streams-total (< threads)
//   shortest WatchStats interval                 50 ms    --watch-min-interval-ms
//   AuditPool, all identities together           1 per 200 ms  --audit-min-interval-ms (0: off)
//   health-only listener (--health-listen)       4 threads, 8 MiB, 4 streams per connection
//
// reason = streams_per_client | streams_total | interval | rate | calls_per_client |
// mutations_per_client. An expensive new RPC is rate-limited with one call:
//
//   if (grpc::Status s = limits_.Admit("TuneStrategy", min_interval); !s.ok()) return s;
//
// The sync server's threads are what an in-flight call holds: streams are capped below the
// thread quota so unary calls always find one, and a refusal costs microseconds of one.
#ifndef SKBNF_SERVER_CONTROL_LIMITS_H_
#define SKBNF_SERVER_CONTROL_LIMITS_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/server_builder.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace skbnf::control {

struct LimitOptions {
  int64_t watch_streams_per_client = 8;
  int64_t watch_streams_total = 16;
  int64_t watch_min_interval_ms = 50;
  int64_t audit_min_interval_ms = 200;
  int64_t grpc_threads = 32;
  int64_t grpc_memory_mb = 128;
  int64_t streams_per_connection = 16;
  int64_t max_connection_age_s = 1800;
  int64_t max_message_bytes = 1 << 20;
  int unix_connections = 64;
  int64_t calls_per_identity = 16;
  int64_t mutations_per_identity = 4;
};

// InvalidArgument naming the flag, the value and what to write instead.
absl::Status CheckLimitOptions(const LimitOptions& o);
// The control API's server: resource quota, streams, keepalive policy, ages, message sizes.
void ApplyServerLimits(const LimitOptions& o, grpc::ServerBuilder& b);
// The health-only server: the same policy, a small quota of its own.
void ApplyHealthLimits(const LimitOptions& o, grpc::ServerBuilder& b);

class CallLimits : public prometheus::Collectable {
 public:
  // Every known refusal's series starts at 0.
  explicit CallLimits(const LimitOptions& o);

  enum class Kind { kStream = 0, kRead = 1, kMutation = 2 };
  // A slot of one call in flight, given back when destroyed.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& o) noexcept : limits_(o.limits_), kind_(o.kind_), client_(std::move(o.client_)) {
      o.limits_ = nullptr;
    }
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    friend class CallLimits;
    CallLimits* limits_ = nullptr;
    Kind kind_ = Kind::kStream;
    std::string client_;
  };
  using StreamSlot = Slot;

  // A slot for one more stream of `client`, or RESOURCE_EXHAUSTED.
  grpc::Status AcquireStream(absl::string_view rpc, const std::string& client, Slot* slot);
  // A slot for one more unary read (kRead) or change (kMutation) of `client` in flight.
  grpc::Status AcquireCall(absl::string_view rpc, const std::string& client, Kind kind,
                           Slot* slot);
  // RESOURCE_EXHAUSTED when `interval_ms` is below --watch-min-interval-ms.
  grpc::Status CheckInterval(absl::string_view rpc, uint32_t interval_ms);
  // At most one accepted `rpc` per `min_interval`, all clients together (0: no limit).
  grpc::Status Admit(absl::string_view rpc, std::chrono::milliseconds min_interval);
  std::chrono::milliseconds audit_min_interval() const {
    return std::chrono::milliseconds(o_.audit_min_interval_ms);
  }

  // skbnf_control_rejected_total{rpc,reason}.
  std::vector<prometheus::MetricFamily> Collect() const override;
  uint64_t Rejected(const std::string& rpc, const std::string& reason) const;

 private:
  grpc::Status Reject(absl::string_view rpc, absl::string_view reason, std::string message);
  void Release(Kind kind, const std::string& client);

  const LimitOptions o_;
  mutable absl::Mutex mu_;
  std::map<std::string, int64_t> by_client_[3] ABSL_GUARDED_BY(mu_);  // by Kind
  int64_t streams_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::chrono::steady_clock::time_point> last_admitted_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, uint64_t> rejected_ ABSL_GUARDED_BY(mu_);
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_LIMITS_H_
