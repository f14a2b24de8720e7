// SPDX-License-Identifier: BSD-3-Clause
#include "server/core/mutations.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/net_text.h"
#include "server/core/pool_share.h"

namespace skbnf::control {

absl::string_view ChangeSourceName(ChangeSource s) {
  switch (s) {
    case ChangeSource::kRpc:
      return "rpc";
    case ChangeSource::kConfig:
      return "config";
    case ChangeSource::kTune:
      return "tune";
    case ChangeSource::kConsole:
      return "console";
  }
  return "rpc";
}

Caller Mutations::InProcessCaller(ChangeSource source) {
  Caller c;
  c.peer = absl::StrCat("local:", ChangeSourceName(source));
  c.loopback = true;
  return c;
}

void Change::Record(absl::string_view rpc, absl::string_view what, const absl::Status& s,
                    absl::string_view result) {
  if (source_ == ChangeSource::kRpc) return;  // RunChange records the call
  std::string label(result);
  if (label.empty()) label = ResultLabel(grpc::Status(static_cast<grpc::StatusCode>(s.code()), ""));
  log_.Record(who_, rpc, what, label, s.message(), ChangeSourceName(source_));
}

pool::SwapReport Change::SwapStrategy(const pool::StrategySpec& spec,
                                      std::chrono::microseconds timeout) {
  const std::string old_spec = backend_.GetStrategy().ToString();
  const std::string what = absl::StrCat(old_spec, " -> ", spec.ToString());
  absl::Status valid = CheckStrategy(backend_, spec);
  if (!valid.ok()) {
    pool::SwapReport refused;
    refused.status = valid;
    refused.old_spec = old_spec;
    refused.new_spec = spec.ToString();
    refused.epoch = backend_.GetEpoch();
    Record("SetStrategy", what, valid);
    return refused;
  }
  pool::SwapReport r = backend_.SwapStrategy(spec, timeout);
  swaps_.Record(r);
  Record("SetStrategy", what, r.status,
         r.status.ok() ? "ok" : (r.rolled_back ? "rolled_back" : "failed"));
  return r;
}

absl::StatusOr<uint32_t> Change::AddRoute(const Ipv4Prefix& prefix, const NextHop& nh) {
  absl::StatusOr<uint32_t> id = backend_.AddRoute(prefix, nh);
  Record("AddRoute",
         absl::StrCat(net::FormatIpv4Prefix(prefix), " port ", nh.port, " mac ",
                      net::FormatMac(nh.dst_mac)),
         id.status());
  return id;
}

absl::Status Change::DeleteRoute(const Ipv4Prefix& prefix) {
  absl::Status s = backend_.DeleteRoute(prefix);
  Record("DeleteRoute", net::FormatIpv4Prefix(prefix), s);
  return s;
}

}  // namespace skbnf::control
