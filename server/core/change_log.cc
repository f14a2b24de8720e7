// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/change_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/time/clock.h"
#include "absl/time/time.h"

#include "absl/strings/str_cat.h"
#include "server/core/metric_families.h"

namespace skbnf::control {
namespace {

const char* CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK:
      return "ok";
    case grpc::StatusCode::CANCELLED:
      return "cancelled";
    case grpc::StatusCode::UNKNOWN:
      return "unknown";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "invalid_argument";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "deadline_exceeded";
    case grpc::StatusCode::NOT_FOUND:
      return "not_found";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "already_exists";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "permission_denied";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "resource_exhausted";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "failed_precondition";
    case grpc::StatusCode::ABORTED:
      return "aborted";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "out_of_range";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "unimplemented";
    case grpc::StatusCode::INTERNAL:
      return "internal";
    case grpc::StatusCode::UNAVAILABLE:
      return "unavailable";
    case grpc::StatusCode::DATA_LOSS:
      return "data_loss";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "unauthenticated";
    default:
      return "unknown";
  }
}

constexpr size_t kMaxValue = 256;
constexpr auto kDenialPeriod = std::chrono::seconds(1);
constexpr int kDenialLinesPerSecond = 20;
constexpr size_t kMaxThrottleKeys = 4096;

std::string Now() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
}

// The common fields of a record.
std::string Head(absl::string_view event, absl::string_view rpc, absl::string_view source,
                 const Caller& who) {
  return absl::StrCat("{\"ts\":\"", Now(), "\",\"event\":\"", event, "\",\"rpc\":",
                      JsonString(rpc), ",\"source\":", JsonString(source),
                      ",\"who\":", JsonString(who.Identity()), ",\"peer\":", JsonString(who.peer),
                      ",\"role\":\"", RoleName(who.role), "\"");
}

}  // namespace

std::string JsonString(absl::string_view v) {
  std::string out = "\"";
  for (size_t i = 0; i < v.size() && i < kMaxValue; ++i) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      absl::StrAppend(&out, "\\u00", absl::Hex(c, absl::kZeroPad2));
    } else {
      out += static_cast<char>(c);
    }
  }
  if (v.size() > kMaxValue) absl::StrAppend(&out, "...(", v.size(), " bytes)");
  out += "\"";
  return out;
}

std::string ResultLabel(const grpc::Status& s) { return CodeName(s.error_code()); }

ChangeLog::ChangeLog() : ChangeLog(2, false) {}

ChangeLog::ChangeLog(int fd, bool sync) : fd_(fd), sync_(sync) {
  for (const char* rpc : {"SetStrategy", "AddRoute", "DeleteRoute", "PauseWorker", "ResumeWorker",
                          "AuditPool", "TuneStrategy"}) {
    for (const char* result : {"ok", "permission_denied"}) counts_[{rpc, result, "rpc"}] = 0;
  }
  // The in-process sources of change (mutations.h: console, config, tune) change strategies (config
  // also routes).
  for (const char* source : {"config", "tune", "console"}) {
    counts_[{"SetStrategy", "ok", source}] = 0;
  }
  counts_[{"ResumeWorker", "ok", "lease"}] = 0;  // a lease that ran out (pause_leases.h)
}

ChangeLog::~ChangeLog() {
  if (own_fd_) ::close(fd_);
}

absl::StatusOr<std::shared_ptr<ChangeLog>> ChangeLog::Open(const std::string& dest) {
  if (dest == "-") return std::make_shared<ChangeLog>();
  const int fd = ::open(dest.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--audit-log: cannot open '", dest, "' for appending: ", std::strerror(errno),
                     "; write - (stderr) or a path in a writable directory"));
  }
  std::shared_ptr<ChangeLog> log(new ChangeLog(fd, true));
  log->own_fd_ = true;
  return log;
}

void ChangeLog::Write(std::string line, bool sync) {
  line += "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (sync && sync_) (void)::fdatasync(fd_);
}

void ChangeLog::Bump(absl::string_view rpc, absl::string_view result, absl::string_view source) {
  absl::MutexLock l(&mu_);
  ++counts_[{std::string(rpc), std::string(result), std::string(source)}];
}

uint64_t ChangeLog::Begin(const Caller& who, absl::string_view rpc, absl::string_view what,
                          absl::string_view source) {
  uint64_t id = 0;
  {
    absl::MutexLock l(&mu_);
    id = next_id_++;
  }
  std::string line = Head("begin", rpc, source, who);
  absl::StrAppend(&line, ",\"id\":", id, ",\"granted_by\":", JsonString(who.granted_by),
                  ",\"what\":", JsonString(what), "}");
  Write(std::move(line), true);
  return id;
}

void ChangeLog::End(uint64_t id, const Caller& who, absl::string_view rpc, absl::string_view what,
                    absl::string_view result, absl::string_view detail,
                    absl::string_view source) {
  std::string line = Head("end", rpc, source, who);
  absl::StrAppend(&line, ",\"id\":", id, ",\"result\":", JsonString(result),
                  ",\"what\":", JsonString(what));
  if (!detail.empty()) absl::StrAppend(&line, ",\"detail\":", JsonString(detail));
  line += "}";
  Bump(rpc, result, source);
  Write(std::move(line), false);
}

void ChangeLog::Validated(const Caller& who, absl::string_view what, absl::string_view result,
                          absl::string_view detail) {
  std::string line = Head("validate", "SetStrategy", "rpc", who);
  absl::StrAppend(&line, ",\"result\":", JsonString(result), ",\"what\":", JsonString(what));
  if (!detail.empty()) absl::StrAppend(&line, ",\"detail\":", JsonString(detail));
  line += "}";
  Write(std::move(line), false);
}

void ChangeLog::Denied(const Caller& who, absl::string_view rpc, Role needed,
                       const grpc::Status& why) {
  const std::string result = ResultLabel(why);
  uint64_t suppressed = 0;
  {
    absl::MutexLock l(&mu_);
    ++counts_[{std::string(rpc), result, "rpc"}];
    const auto now = std::chrono::steady_clock::now();
    if (now - window_ >= std::chrono::seconds(1)) {
      window_ = now;
      lines_in_window_ = 0;
    }
    const std::string key = absl::StrCat(who.ClientKey(), "|", rpc);
    if (denied_.size() >= kMaxThrottleKeys && denied_.find(key) == denied_.end()) {
      for (auto it = denied_.begin(); it != denied_.end();) {  // forget the quiet ones
        it = now - it->second.last >= kDenialPeriod && it->second.suppressed == 0
                 ? denied_.erase(it)
                 : std::next(it);
      }
    }
    Throttle& t = denied_[key];
    if ((t.last != std::chrono::steady_clock::time_point{} && now - t.last < kDenialPeriod) ||
        lines_in_window_ >= kDenialLinesPerSecond) {
      ++t.suppressed;
      return;
    }
    t.last = now;
    suppressed = t.suppressed;
    t.suppressed = 0;
    ++lines_in_window_;
  }
  std::string line = Head("denied", rpc, "rpc", who);
  absl::StrAppend(&line, ",\"needs\":\"", RoleName(needed), "\",\"result\":\"", result,
                  "\",\"suppressed\":", suppressed, ",\"detail\":", JsonString(why.error_message()),
                  "}");
  Write(std::move(line), false);
}

uint64_t ChangeLog::Count(const std::string& rpc, const std::string& result) const {
  absl::MutexLock l(&mu_);
  uint64_t n = 0;
  for (const auto& [key, count] : counts_) {
    if (std::get<0>(key) == rpc && std::get<1>(key) == result) n += count;
  }
  return n;
}

uint64_t ChangeLog::Count(const std::string& rpc, const std::string& result,
                          const std::string& source) const {
  absl::MutexLock l(&mu_);
  auto it = counts_.find({rpc, result, source});
  return it == counts_.end() ? 0 : it->second;
}

std::vector<prometheus::MetricFamily> ChangeLog::Collect() const {
  prometheus::MetricFamily f = NewFamily(metric::kControlChangesTotal);
  absl::MutexLock l(&mu_);
  for (const auto& [key, n] : counts_) {
    prometheus::ClientMetric m;
    m.label = {
        {"rpc", std::get<0>(key)}, {"result", std::get<1>(key)}, {"source", std::get<2>(key)}};
    m.counter.value = static_cast<double>(n);
    f.metric.push_back(std::move(m));
  }
  return {std::move(f)};
}

}  // namespace skbnf::control
