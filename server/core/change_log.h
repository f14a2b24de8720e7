// SPDX-License-Identifier: BSD-3-Clause
// ChangeLog: every attempt to change the data plane through the control API, logged and counted.
//
// One line per attempt on stderr (the daemon's log, the container's log), whatever the result:
//
//   skbnf-control: change rpc=SetStrategy what="magazine -> headpool" peer=ipv4:127.0.0.1:41234
//   identity=- result=ok source=rpc
//
// (one line; `identity` is the verified client certificate's CN and SANs, "-" without one;
// `detail` follows when the call failed) and one count in
// skbnf_control_changes_total{rpc,result,source}, result = ok | the gRPC code in lower case
// (permission_denied, invalid_argument, ...) | rolled_back / failed for a swap that did not commit;
// source = rpc | config | tune | console (mutations.h: every change goes through Mutations, and
// the in-process ones are logged too, with peer=local:<source>).
//
// A handler makes itself a logged, authorised change with RunChange (below): the access check
// (access.h), then its body, then the record. A new mutating RPC is one call:
//
//   return RunChange(access_, changes_, ctx, "TuneStrategy", what, [&](std::string* result) {
//     ... validate, apply; optionally *result = "rolled_back" ...
//     return grpc::Status::OK;
//   });
#ifndef SKBNF_SERVER_CORE_CHANGE_LOG_H_
#define SKBNF_SERVER_CORE_CHANGE_LOG_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/core/access.h"

namespace skbnf::control {

class ChangeLog : public prometheus::Collectable {
 public:
  // Starts every known change RPC's ok and permission_denied series at 0, so rate() and alerts
  // see the first one.
  ChangeLog();
  // Logs one line and counts it. `detail` (the error message) may be empty.
  void Record(const Caller& who, absl::string_view rpc, absl::string_view what,
              absl::string_view result, absl::string_view detail, absl::string_view source = "rpc");
  // skbnf_control_changes_total{rpc,result,source}.
  std::vector<prometheus::MetricFamily> Collect() const override;
  // Over every source, or one.
  uint64_t Count(const std::string& rpc, const std::string& result) const;
  uint64_t Count(const std::string& rpc, const std::string& result,
                 const std::string& source) const;

 private:
  mutable absl::Mutex mu_;
  // (rpc, result, source) -> count
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> counts_
      ABSL_GUARDED_BY(mu_);
};

// "ok" or the status code in lower case ("permission_denied").
std::string ResultLabel(const grpc::Status& s);

// Authorises `rpc` for the caller of `ctx`, runs `apply(std::string* result)` when allowed, and
// records the attempt. `apply` may set *result (e.g. "rolled_back"); otherwise it is
// ResultLabel of the returned status.
template <typename Apply>
grpc::Status RunChange(const AccessPolicy& access, ChangeLog& log, grpc::ServerContext* ctx,
                       absl::string_view rpc, absl::string_view what, Apply&& apply) {
  const Caller caller = IdentifyCaller(*ctx);
  std::string result;
  grpc::Status s = AuthorizeChange(access, caller, rpc);
  if (s.ok()) s = apply(&result);
  if (result.empty()) result = ResultLabel(s);
  log.Record(caller, rpc, what, result, s.error_message(), "rpc");
  return s;
}

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_CHANGE_LOG_H_
