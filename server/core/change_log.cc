// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/change_log.h"

#include <iostream>

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

// Log values are quoted, with quotes, backslashes and control bytes escaped (one change is one
// line, and a client cannot forge lines or terminal escapes), and cut at kMaxValue bytes (a
// client cannot flood the log with a megabyte spec).
constexpr size_t kMaxValue = 256;

std::string Quote(absl::string_view v) {
  std::string out = "\"";
  for (size_t i = 0; i < v.size() && i < kMaxValue; ++i) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(c, absl::kZeroPad2));
    } else {
      out += static_cast<char>(c);
    }
  }
  if (v.size() > kMaxValue) absl::StrAppend(&out, "...(", v.size(), " bytes)");
  out += "\"";
  return out;
}

}  // namespace

std::string ResultLabel(const grpc::Status& s) { return CodeName(s.error_code()); }

ChangeLog::ChangeLog() {
  for (const char* rpc : {"SetStrategy", "AddRoute", "DeleteRoute", "PauseWorker", "ResumeWorker",
                          "AuditPool", "TuneStrategy"}) {
    for (const char* result : {"ok", "permission_denied"}) counts_[{rpc, result, "rpc"}] = 0;
  }
  // The in-process sources of change (mutations.h: console, config, tune) change strategies (config
  // also routes).
  for (const char* source : {"config", "tune", "console"}) {
    counts_[{"SetStrategy", "ok", source}] = 0;
  }
}

void ChangeLog::Record(const Caller& who, absl::string_view rpc, absl::string_view what,
                       absl::string_view result, absl::string_view detail,
                       absl::string_view source) {
  std::string line =
      absl::StrCat("skbnf-control: change rpc=", rpc, " what=", Quote(what), " peer=", who.peer,
                   " identity=", Quote(who.Identity()), " result=", result, " source=", source);
  if (!detail.empty()) absl::StrAppend(&line, " detail=", Quote(detail));
  line += "\n";
  {
    absl::MutexLock l(&mu_);
    ++counts_[{std::string(rpc), std::string(result), std::string(source)}];
  }
  std::cerr << line << std::flush;
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
