// SPDX-License-Identifier: BSD-3-Clause
// CallLimits: bounds on what one client, and all of them, may ask of the control plane.
//
// Reads are cheap but not free: a WatchStats stream holds a server thread and takes a stats
// snapshot every interval; AuditPool parks every worker for the length of a pool walk. Without
// bounds any local process (or, with TLS, any remote reader) can hold every server thread or
// keep the workers parked. The limits (flags in control_flags.cc):
//
//   limit                                    default  flag
//   WatchStats streams per client            8        --watch-streams-per-client
//   WatchStats streams in all                64       --watch-streams-total
//   shortest WatchStats interval             50 ms    --watch-min-interval-ms
//   AuditPool, all clients together          1 per 200 ms  --audit-min-interval-ms (0: off)
//
// A client is its verified certificate, else its IP address (every unix-socket client is one
// client: "unix"). Every refusal is RESOURCE_EXHAUSTED saying which limit and which flag raises
// it, and is counted in skbnf_control_rejected_total{rpc,reason}, reason = streams_per_client |
// streams_total | interval | rate. An expensive new RPC is rate-limited with one call:
//
//   if (grpc::Status s = limits_.Admit("TuneStrategy", min_interval); !s.ok()) return s;
#ifndef SKBNF_SERVER_CONTROL_LIMITS_H_
#define SKBNF_SERVER_CONTROL_LIMITS_H_

#include <grpcpp/grpcpp.h>

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
  int64_t watch_streams_total = 64;
  int64_t watch_min_interval_ms = 50;
  int64_t audit_min_interval_ms = 200;
};

// InvalidArgument naming the flag, the value and what to write instead.
absl::Status CheckLimitOptions(const LimitOptions& o);

class CallLimits : public prometheus::Collectable {
 public:
  // Every known refusal's series starts at 0.
  explicit CallLimits(const LimitOptions& o);

  // A WatchStats slot, given back when destroyed.
  class StreamSlot {
   public:
    StreamSlot() = default;
    StreamSlot(StreamSlot&& o) noexcept : limits_(o.limits_), client_(std::move(o.client_)) {
      o.limits_ = nullptr;
    }
    StreamSlot& operator=(StreamSlot&&) = delete;
    ~StreamSlot();

   private:
    friend class CallLimits;
    CallLimits* limits_ = nullptr;
    std::string client_;
  };

  // A slot for one more stream of `client`, or RESOURCE_EXHAUSTED.
  grpc::Status AcquireStream(absl::string_view rpc, const std::string& client, StreamSlot* slot);
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
  void Release(const std::string& client);

  const LimitOptions o_;
  mutable absl::Mutex mu_;
  std::map<std::string, int64_t> streams_by_client_ ABSL_GUARDED_BY(mu_);
  int64_t streams_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::chrono::steady_clock::time_point> last_admitted_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, uint64_t> rejected_ ABSL_GUARDED_BY(mu_);
};

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CONTROL_LIMITS_H_
