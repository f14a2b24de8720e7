// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/demo.h"

#include <unistd.h>

#include <cstdio>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/net_text.h"
#include "server/daemon/traffic.h"

ABSL_FLAG(int32_t, demo_routes, 10000, "Prefixes in the demo's generated route table.");
ABSL_FLAG(int32_t, demo_dests, 4096, "Distinct destinations in the demo's generated traffic.");

namespace skbnf::control {

Demo::~Demo() {
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

absl::Status Demo::SetUp(dpdk::DaemonConfig& dc) {
  const int routes = absl::GetFlag(FLAGS_demo_routes);
  const int dests = absl::GetFlag(FLAGS_demo_dests);
  if (routes < 1 || dests < 1) {
    return absl::InvalidArgumentError("--demo-routes and --demo-dests must be >= 1");
  }
  dir_ = std::filesystem::temp_directory_path() / absl::StrCat("skbnfd-demo-", getpid());
  std::filesystem::create_directories(dir_);
  const std::string pcap = (dir_ / "traffic.pcap").string();
  dpdk::EngineConfig& c = dc.engine;
  c.mode = dpdk::ForwardingMode::kL3;
  c.routes = dpdk::RandomRoutes(static_cast<uint32_t>(routes), "net_null0", 1);
  std::vector<std::pair<uint32_t, uint8_t>> prefixes;
  for (const dpdk::RouteSpec& r : c.routes) {
    if (auto p = net::ParseIpv4Prefix(r.prefix); p.ok()) prefixes.emplace_back(p->addr, p->len);
  }
  if (absl::Status st =
          dpdk::WritePcap(pcap, dpdk::DemoFrames(static_cast<uint32_t>(dests), prefixes, 2));
      !st.ok()) {
    return st;
  }
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  dc.eal = {"--no-huge",
            "-m",
            "512",
            "--no-pci",
            "--no-shconf",
            absl::StrCat("--file-prefix=skbnfd-demo-", getpid()),
            cpus >= 2 ? "-l" : "--lcores",
            cpus >= 2 ? "0,1" : "(0,1)@0",
            absl::StrCat("--vdev=net_pcap0,rx_pcap=", pcap, ",infinite_rx=1"),
            "--vdev=net_null0",
            "--log-level=lib.*:warning"};
  c.ports = {dpdk::PortSpec{"net_pcap0", "net_null0", ""},
             dpdk::PortSpec{"net_null0", "net_pcap0", ""}};
  c.workers = {dpdk::WorkerSpec{1, {{"net_pcap0", 0}}}};
  dests_ = dests;
  return absl::OkStatus();
}

void Demo::Finish(dpdk::EngineConfig& c) const {
  if (!active()) return;
  if (c.mode != dpdk::ForwardingMode::kL3) c.routes.clear();
  const std::string pcap = (dir_ / "traffic.pcap").string();
  std::printf(
      "skbnfd demo: %s over %zu generated prefixes (10.0.0.0/8, /16../24), %d destinations "
      "replayed from %s by net_pcap (infinite_rx), sink net_null0. Ctrl-C stops.\n",
      dpdk::ForwardingModeName(c.mode), c.routes.size(), dests_, pcap.c_str());
}

}  // namespace skbnf::control
