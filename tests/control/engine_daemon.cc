// skbnf_engine_daemon: the control plane over the real DPDK engine (dataplane/dpdk) on vdevs,
// for the control tests until skbnfd's main starts the control plane itself. Traffic: net_pcap
// replaying generated IPv4/UDP frames (infinite_rx) into net_pcap0, forwarded by one worker
// (lcore 1) to net_null0; l3 mode routes them through a generated table.
//
//   skbnf_engine_daemon [--engine-mode=l3|io|mac] [--engine-pool-ops=skbnf|ring_mp_mc]
//                       [--engine-strategy=SPEC] + the control-plane flags (server/)
#include <rte_eal.h>
#include <rte_lcore.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/config.h"
#include "dataplane/dpdk/engine.h"
#include "dataplane/dpdk/traffic.h"
#include "server/control_plane.h"
#include "server/engine_backend.h"

ABSL_FLAG(std::string, engine_mode, "l3", "forwarding mode io|mac|l3");
ABSL_FLAG(std::string, engine_pool_ops, "skbnf", "skbnf or ring_mp_mc");
ABSL_FLAG(std::string, engine_strategy, "magazine", "initial strategy (skbnf ops)");

int main(int argc, char** argv) {
  std::vector<char*> rest = skbnf::control::ParseFlags(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "skbnf_engine_daemon: unexpected argument '" << rest[1] << "'\n";
    return 2;
  }
  namespace d = skbnf::dpdk;
  auto mode = d::ParseMode(absl::GetFlag(FLAGS_engine_mode));
  if (!mode.ok()) {
    std::cerr << "skbnf_engine_daemon: " << mode.status().message() << "\n";
    return 2;
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("skbnf-engine-daemon-", getpid());
  std::filesystem::create_directories(dir);
  const std::string pcap = (dir / "traffic.pcap").string();
  d::EngineConfig c;
  c.mode = *mode;
  c.pool_ops = absl::GetFlag(FLAGS_engine_pool_ops);
  c.strategy = absl::GetFlag(FLAGS_engine_strategy);
  c.rx_ring = 512;
  c.tx_ring = 512;
  if (c.mode == d::Mode::kL3) c.routes = d::RandomRoutes(64, "net_null0", 1);
  std::vector<std::pair<uint32_t, uint8_t>> prefixes;
  for (const d::RouteSpec& r : c.routes) {
    uint32_t p;
    uint8_t len;
    if (d::ParsePrefix(r.prefix, &p, &len).ok()) prefixes.emplace_back(p, len);
  }
  if (prefixes.empty()) prefixes.emplace_back(0x0a000000u, 8);
  if (absl::Status s = d::WritePcap(pcap, d::DemoFrames(256, prefixes, 2)); !s.ok()) {
    std::cerr << "skbnf_engine_daemon: " << s.message() << "\n";
    return 1;
  }
  c.ports = {d::PortSpec{"net_pcap0", "net_null0", ""}, d::PortSpec{"net_null0", "net_pcap0", ""}};
  c.workers = {d::WorkerSpec{1, {{"net_pcap0", 0}}}};
  std::vector<std::string> eal = {argv[0],
                                  "--no-huge",
                                  "-m",
                                  "256",
                                  "--no-pci",
                                  "--no-shconf",
                                  absl::StrCat("--file-prefix=skbnf-ctl-", getpid()),
                                  std::thread::hardware_concurrency() >= 2 ? "-l" : "--lcores",
                                  std::thread::hardware_concurrency() >= 2 ? "0,1" : "(0,1)@0",
                                  absl::StrCat("--vdev=net_pcap0,rx_pcap=", pcap, ",infinite_rx=1"),
                                  "--vdev=net_null0",
                                  "--log-level=lib.*:warning"};
  std::vector<char*> eal_argv;
  for (std::string& s : eal) eal_argv.push_back(s.data());
  if (rte_eal_init(static_cast<int>(eal_argv.size()), eal_argv.data()) < 0) {
    std::cerr << "skbnf_engine_daemon: EAL initialisation failed\n";
    return 1;
  }
  int code = 0;
  {
    auto engine = d::Engine::Create(c);
    if (!engine.ok()) {
      std::cerr << "skbnf_engine_daemon: " << engine.status().message() << "\n";
      rte_eal_cleanup();
      return 1;
    }
    if (absl::Status s = (*engine)->Start(); !s.ok()) {
      std::cerr << "skbnf_engine_daemon: " << s.message() << "\n";
      return 1;
    }
    skbnf::control::EngineBackend backend(**engine, eal, rte_get_main_lcore());
    auto cp = skbnf::control::ControlPlane::Start(backend, skbnf::control::OptionsFromFlags());
    if (!cp.ok()) {
      std::cerr << "skbnf_engine_daemon: " << cp.status().message() << "\n";
      code = 1;
    } else {
      skbnf::control::WaitForSignal();
      (*cp)->Shutdown();
    }
    (void)(*engine)->Stop();
    if (code == 0 && !(*engine)->final_audit().ok) {
      std::cerr << "skbnf_engine_daemon: final audit failed: " << (*engine)->final_audit().message
                << "\n";
      code = 3;
    }
  }
  rte_eal_cleanup();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return code;
}
