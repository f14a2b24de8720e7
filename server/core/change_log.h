// SPDX-License-Identifier: BSD-3-Clause
// ChangeLog: the audit trail. Every attempt to change the data plane, and every refusal, as JSON
// lines to --audit-log (- = stderr, the default, i.e. the container's log; else a file appended
// to, O_APPEND, one write(2) per record so concurrent records never interleave):
//
//   {"ts":"2026-12-03T10:00:00.123Z","event":"begin","id":7,"rpc":"SetStrategy","source":"rpc",
//    "who":"uid:1000 gid:1000 pid:4242","peer":"fd:12","role":"admin",
//    "granted_by":"skbnfd's own uid 1000","what":"magazine -> headpool"}
//   {"ts":"2026-12-03T10:00:00.140Z","event":"end","id":7,"rpc":"SetStrategy","source":"rpc",
//    "who":...,"result":"ok","what":...}
//   {"ts":...,"event":"denied","rpc":"AddRoute","who":"uid:1001 gid:1001 pid:99","peer":"fd:14",
//    "role":"read","needs":"admin","suppressed":0,"detail":"AddRoute needs role admin ..."}
//   {"ts":...,"event":"validate","rpc":"SetStrategy",...,"result":"ok"}  (validate_only: a read)
//
// * begin is written - and, for a file, fdatasync()ed - before the change is applied: a change
//   whose process is killed mid-swap (SIGKILL, OOM) still has its begin record, with no end.
//   An end record carries the begin's id.
// * denied records are throttled: per identity and RPC at most one line per second, and at most
//   20 denial lines per second in all; "suppressed" is how many of that identity's denials of
//   that RPC were not written since its last line (a reader flooding refusals cannot rotate the
//   real records away). Every denial is still counted in the metric.
// * values are JSON strings, control bytes and bytes >= 0x80 escaped (\u00XX), each cut at 256
//   bytes ("...(N bytes)"): a client cannot forge records or flood the log with a large spec.
//
// Counted in skbnf_control_changes_total{rpc,result,source}, result = ok | the gRPC code in
// lower case (permission_denied, invalid_argument, ...) | rolled_back / failed for a swap that
// did not commit; source = rpc | config | tune | console (mutations.h: every change goes through
// Mutations, the in-process ones are audited too, who = local:<source>).
//
// A handler audits a change with RunChange (below), after its caller was identified and
// authorised (control_service.h):
//
//   return RunChange(changes_, caller, "TuneStrategy", what, [&](std::string* result) {
//     ... validate, apply; optionally *result = "rolled_back" ...
//     return grpc::Status::OK;
//   });
#ifndef SKBNF_SERVER_CORE_CHANGE_LOG_H_
#define SKBNF_SERVER_CORE_CHANGE_LOG_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/core/access.h"

namespace skbnf::control {

class ChangeLog : public prometheus::Collectable {
 public:
  // To stderr. Starts every known change RPC's ok and permission_denied series at 0, so rate()
  // and alerts see the first one.
  ChangeLog();
  ~ChangeLog() override;
  // "-": stderr; else the file, created 0640 if missing and appended to. InvalidArgument naming
  // --audit-log when it cannot be opened.
  static absl::StatusOr<std::shared_ptr<ChangeLog>> Open(const std::string& dest);

  // The begin record (written and synced before it returns); its id for End.
  uint64_t Begin(const Caller& who, absl::string_view rpc, absl::string_view what,
                 absl::string_view source = "rpc");
  // The end record, counted. `detail` (the error message) may be empty.
  void End(uint64_t id, const Caller& who, absl::string_view rpc, absl::string_view what,
           absl::string_view result, absl::string_view detail, absl::string_view source = "rpc");
  // A refusal (PERMISSION_DENIED or RESOURCE_EXHAUSTED before anything ran): counted, written
  // throttled (above).
  void Denied(const Caller& who, absl::string_view rpc, Role needed, const grpc::Status& why);
  // A validate-only SetStrategy: one record, not counted as a change.
  void Validated(const Caller& who, absl::string_view what, absl::string_view result,
                 absl::string_view detail);

  // skbnf_control_changes_total{rpc,result,source}.
  std::vector<prometheus::MetricFamily> Collect() const override;
  // Over every source, or one.
  uint64_t Count(const std::string& rpc, const std::string& result) const;
  uint64_t Count(const std::string& rpc, const std::string& result,
                 const std::string& source) const;

 private:
  explicit ChangeLog(int fd, bool sync);
  void Write(std::string line, bool sync);
  void Bump(absl::string_view rpc, absl::string_view result, absl::string_view source);

  int fd_ = 2;
  bool own_fd_ = false;
  bool sync_ = false;  // fdatasync begin records (a file)
  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // (rpc, result, source) -> count
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> counts_
      ABSL_GUARDED_BY(mu_);
  struct Throttle {
    std::chrono::steady_clock::time_point last{};
    uint64_t suppressed = 0;
  };
  std::map<std::string, Throttle> denied_ ABSL_GUARDED_BY(mu_);  // identity + rpc
  std::chrono::steady_clock::time_point window_ ABSL_GUARDED_BY(mu_){};
  int lines_in_window_ ABSL_GUARDED_BY(mu_) = 0;
};

// "ok" or the status code in lower case ("permission_denied").
std::string ResultLabel(const grpc::Status& s);
// `v` as a JSON string (quoted), escaped and cut as the header says.
std::string JsonString(absl::string_view v);

// Runs `apply(std::string* result)` between a begin and an end record of `caller`'s `rpc`.
// `apply` may set *result (e.g. "rolled_back"); otherwise it is ResultLabel of its status.
template <typename Apply>
grpc::Status RunChange(ChangeLog& log, const Caller& caller, absl::string_view rpc,
                       absl::string_view what, Apply&& apply) {
  const uint64_t id = log.Begin(caller, rpc, what, "rpc");
  std::string result;
  grpc::Status s = apply(&result);
  if (result.empty()) result = ResultLabel(s);
  log.End(id, caller, rpc, what, result, s.error_message(), "rpc");
  return s;
}

}  // namespace skbnf::control

#endif  // SKBNF_SERVER_CORE_CHANGE_LOG_H_
