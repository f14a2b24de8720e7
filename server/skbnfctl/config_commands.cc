// SPDX-License-Identifier: BSD-3-Clause
// skbnfctl config diff: how the running state differs from skbnfd's --config file (the DiffConfig
// RPC: the computation behind skbnf_config_drift, server/control/config_diff.h), printed the
// way `diff -u FILE RUNNING` would print two files holding one setting per line, in the config
// file's own syntax (server/ops/config.h; ports by id):
//
//   --- /etc/skbnf/skbnfd.conf (the config file)
//   +++ running (skbnfd now)
//   -strategy recycle+magazine          the file's line, not what runs
//   +strategy headpool                  what runs, not in the file
//   -route 192.0.2.0/24 1 02:00:00:00:01:02
//   +route 10.9.0.0/16 1 02:00:00:00:09:09
//   # strategy headpool (file: recycle+magazine); routes: 1 not in the file, 1 of the ...
//
// A prefix whose next hop differs has both lines, file first. With no drift: one line saying so.
// Exit codes as diff(1)'s, so scripts can tell drift from trouble: 0 no drift, 1 drift, 2 a usage
// error or the server could not answer (its status on stderr; e.g. FAILED_PRECONDITION when
// skbnfd runs without --config). --json prints DiffConfigResponse, same exit codes.
#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/skbnfctl/client.h"

namespace skbnf::ctl {
namespace {

std::string RouteLine(char side, const std::string& prefix, const v1::NextHop& nh) {
  return absl::StrCat(std::string(1, side), "route ", prefix, " ", nh.port(), " ", nh.dst_mac());
}

}  // namespace

absl::StatusOr<int> Client::Config(const std::vector<std::string>& p) {
  if (p.size() != 2 || p[1] != "diff") return CommandUsage("config diff");
  v1::DiffConfigResponse r;
  grpc::Status s = stub_->DiffConfig(Ctx().get(), v1::DiffConfigRequest(), &r);
  if (!s.ok()) {
    Fail(s);
    return 2;  // trouble, as diff(1): never mistaken for drift
  }
  const bool drift = r.strategy_differs() || r.routes_size() > 0;
  if (json_) return Json(r), drift ? 1 : 0;
  if (!drift) {
    std::cout << "no drift: the running state is " << r.config_path() << "'s\n";
    return 0;
  }
  std::cout << "--- " << r.config_path() << " (the config file)\n"
            << "+++ running (skbnfd now)\n";
  if (r.strategy_differs()) {
    std::cout << "-strategy " << r.file_strategy() << "\n"
              << "+strategy " << r.running_strategy() << "\n";
  }
  size_t only_running = 0;
  for (const v1::RouteDifference& d : r.routes()) {
    if (d.has_file()) std::cout << RouteLine('-', d.prefix(), d.file()) << "\n";
    if (d.has_running()) std::cout << RouteLine('+', d.prefix(), d.running()) << "\n";
    only_running += d.has_file() ? 0 : 1;
  }
  std::vector<std::string> parts;
  if (r.strategy_differs()) {
    parts.push_back(
        absl::StrCat("strategy ", r.running_strategy(), " (file: ", r.file_strategy(), ")"));
  }
  if (r.routes_size() > 0) {
    parts.push_back(absl::StrCat("routes: ", only_running, " not in the file, ",
                                 static_cast<size_t>(r.routes_size()) - only_running,
                                 " of the file's missing or different"));
  }
  std::cout << "# " << absl::StrJoin(parts, "; ")
            << " (a restart goes back to the file: put the change in the file, or reload it)\n";
  return 1;
}

}  // namespace skbnf::ctl
