// SPDX-License-Identifier: BSD-3-Clause
// control_swap_bench: SetStrategy commit latency through the gRPC API.
//
// Runs N swaps (default 1000) against a running daemon, cycling through a list of strategies
// so that every call really swaps, and prints p50/p99/max of
//   rpc     the client-observed SetStrategy round trip (gRPC + validation + swap + report),
//   commit  the swap itself as the pool reports it (SwapReport.total_ns: publish to retirement),
//   quiesce the slowest worker's acknowledgement in each swap (max over CoreSwap.quiesce_ns).
// A swap that fails or rolls back is counted and reported; the run still completes.
//
//   control_swap_bench --addr=127.0.0.1:50051 [--swaps=1000] [--specs=a;b;c] [--json]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "skbnf/v1/control.grpc.pb.h"

namespace {

struct Dist {
  std::vector<double> v;  // microseconds
  double Below(double us) const {
    return v.empty() ? 0
                     : static_cast<double>(
                           std::count_if(v.begin(), v.end(), [us](double x) { return x < us; })) /
                           static_cast<double>(v.size());
  }
  double P(double q) {
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0;
    size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string addr = "127.0.0.1:50051";
  int swaps = 1000;
  bool json = false;
  std::vector<std::string> specs = {
      "magazine",         "headpool", "recycle+magazine", "headpool+magazine,prefetch",
      "recycle+headpool", "slab",     "lcache",           "magazine:size=64"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (absl::StartsWith(a, "--addr=")) {
      addr = a.substr(7);
    } else if (absl::StartsWith(a, "--swaps=") && absl::SimpleAtoi(a.substr(8), &swaps) &&
               swaps > 0) {
    } else if (absl::StartsWith(a, "--specs=")) {
      specs = absl::StrSplit(a.substr(8), ';', absl::SkipEmpty());
    } else if (a == "--json") {
      json = true;
    } else {
      std::cerr << "usage: control_swap_bench --addr=ADDR [--swaps=N] [--specs=a;b] [--json]\n";
      return 2;
    }
  }
  auto stub =
      skbnf::v1::Control::NewStub(grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()));
  Dist rpc, commit, quiesce;
  int failed = 0, rolled_back = 0;
  std::string last;
  {
    grpc::ClientContext ctx;
    skbnf::v1::GetStrategyResponse r;
    grpc::Status s = stub->GetStrategy(&ctx, skbnf::v1::GetStrategyRequest(), &r);
    if (!s.ok()) {
      std::cerr << "control_swap_bench: " << addr << ": " << s.error_message() << "\n";
      return 1;
    }
    last = r.spec();
  }
  for (int i = 0, k = 0; i < swaps; ++i) {
    std::string spec = specs[k++ % specs.size()];
    if (spec == last) spec = specs[k++ % specs.size()];
    skbnf::v1::SetStrategyRequest req;
    req.set_spec(spec);
    skbnf::v1::SetStrategyResponse resp;
    grpc::ClientContext ctx;
    auto t0 = std::chrono::steady_clock::now();
    grpc::Status s = stub->SetStrategy(&ctx, req, &resp);
    auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) {
      std::cerr << "control_swap_bench: " << spec << ": " << s.error_message() << "\n";
      return 1;
    }
    const auto& rep = resp.report();
    if (!rep.ok()) ++failed;
    if (rep.rolled_back()) ++rolled_back;
    last = rep.ok() ? spec : last;
    rpc.v.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    commit.v.push_back(static_cast<double>(rep.total_ns()) / 1e3);
    uint64_t q = 0;
    for (const auto& c : rep.cores()) q = std::max<uint64_t>(q, c.quiesce_ns());
    quiesce.v.push_back(static_cast<double>(q) / 1e3);
  }
  if (json) {
    std::printf(
        "{\"swaps\":%d,\"failed\":%d,\"rolled_back\":%d,"
        "\"rpc_us\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f},"
        "\"commit_us\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f},"
        "\"quiesce_us\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f}}\n",
        swaps, failed, rolled_back, rpc.P(.5), rpc.P(.99), rpc.P(1), commit.P(.5), commit.P(.99),
        commit.P(1), quiesce.P(.5), quiesce.P(.99), quiesce.P(1));
  } else {
    std::printf("swaps %d  failed %d  rolled back %d\n", swaps, failed, rolled_back);
    std::printf("%-8s %10s %10s %10s %10s %9s   (microseconds)\n", "", "p50", "p90", "p99", "max",
                "<1ms");
    for (auto [name, d] :
         {std::pair<const char*, Dist*>{"rpc", &rpc}, {"commit", &commit}, {"quiesce", &quiesce}}) {
      std::printf("%-8s %10.1f %10.1f %10.1f %10.1f %8.1f%%\n", name, d->P(.5), d->P(.9), d->P(.99),
                  d->P(1), 100 * d->Below(1000));
    }
  }
  return failed == 0 ? 0 : 1;
}
