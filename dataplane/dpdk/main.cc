// skbnfd: the skbnf data plane.
//
//   skbnfd [flags] [-- EAL arguments]
//
// With no EAL arguments and no --config it runs the demo: no NIC and no hugepages needed.
//   traffic  net_pcap0 replays (infinite_rx=1) a pcap generated at start-up: 64-byte
//            IPv4/UDP frames to --demo-dests distinct destinations inside the route table
//            (1/64 to 192.0.2.0/24: no_route; 1/128 with TTL 1: ttl_expired)
//   routing  --mode=l3 over --demo-routes random prefixes in 10.0.0.0/8 (lengths 16..24,
//            seed 1), next hops 02:00:00:00:01:00..0f, all out of net_null0 (the sink)
//   workers  every non-main lcore polls net_pcap0; the main lcore prints one line per worker
//            per second (pps, alloc/s, free/s, strategy) until Ctrl-C.
// Every RX refill and TX free goes through the skbnf mempool driver.
//
// Shutdown on SIGINT/SIGTERM: stop workers, stop and close ports (drain), audit the pool, print
// one summary line; exit 0, or 1 when the audit fails.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "dataplane/dpdk/config.h"
#include "dataplane/dpdk/engine.h"
#include "dataplane/dpdk/traffic.h"
#include "dataplane/pool/strategy_spec.h"
#if SKBNF_WITH_CONTROL
#include "server/control_plane.h"
#include "server/engine_backend.h"
#endif

// Flags are spelt --pool-ops or --pool_ops alike (see Run).
ABSL_FLAG(std::string, config, "", "configuration file (format: dataplane/dpdk/config.h)");
ABSL_FLAG(std::string, mode, "", "forwarding mode: io, mac or l3 (default io; demo: l3)");
ABSL_FLAG(std::string, strategy, "",
          "buffer strategy spec, e.g. magazine, recycle+headpool, lcache+magazine:size=64,prefetch "
          "(default magazine)");
ABSL_FLAG(std::string, pool_ops, "",
          "mempool ops: skbnf (our buffer core) or ring_mp_mc (DPDK's native pool, the baseline)");
ABSL_FLAG(int32_t, mbuf_cache, -1, "DPDK lcore cache size for --pool-ops=ring_mp_mc (default 256)");
ABSL_FLAG(int64_t, mbufs, -1, "mbufs in the pool (default: sized from the rings)");
ABSL_FLAG(int32_t, burst, -1, "RX/TX burst size (default 32)");
ABSL_FLAG(int32_t, rx_ring, -1, "RX descriptors per queue (default 1024)");
ABSL_FLAG(int32_t, tx_ring, -1, "TX descriptors per queue (default 1024)");
ABSL_FLAG(int32_t, rx_queues, -1, "RX queues per port (default 1)");
ABSL_FLAG(bool, colour, false, "slab colouring in the skbnf pool");
ABSL_FLAG(bool, pool_debug, false, "the pool's double/foreign-free checks");
ABSL_FLAG(bool, pcidevice_env, false,
          "add `-a <addr>` EAL arguments for every PCI address in PCIDEVICE_* environment "
          "variables (the Kubernetes SR-IOV device plugin's), e.g. VFs bound to vfio-pci");
ABSL_FLAG(double, stats, 1.0, "seconds between per-core lines (0: none)");
ABSL_FLAG(double, duration, 0.0, "stop after this many seconds (0: run until SIGINT/SIGTERM)");
ABSL_FLAG(std::string, swap_cycle, "",
          "hot-swap the strategy while forwarding, cycling through these ';'-separated specs "
          "(e.g. 'headpool;recycle+headpool;magazine'), one swap every --swap-every seconds");
ABSL_FLAG(double, swap_every, 5.0, "seconds between the swaps of --swap-cycle");
ABSL_FLAG(int32_t, demo_routes, 10000, "demo: prefixes in the generated route table");
ABSL_FLAG(int32_t, demo_dests, 4096, "demo: distinct destinations in the generated traffic");

namespace skbnf::dpdk {
namespace {

std::atomic<bool> g_quit{false};
std::filesystem::path g_demo_dir;  // removed on every exit path
std::string g_runtime_dir;         // EAL's, removed at exit when empty

// Registered before rte_eal_init, so it runs after EAL's own exit handlers (telemetry removes
// its sockets there): EAL leaves an empty runtime directory per --file-prefix otherwise.
void RemoveRuntimeDir() {
  if (!g_runtime_dir.empty()) ::rmdir(g_runtime_dir.c_str());
}

void OnSignal(int) { g_quit.store(true); }

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "skbnfd: %s\n", msg.c_str());
  if (!g_demo_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(g_demo_dir, ec);
  }
  std::exit(2);
}

template <typename T>
void Override(int64_t flag, int64_t max, const char* name, T* out) {
  if (flag < 0) return;
  if (flag > max || (flag == 0 && std::string(name) != "mbuf-cache")) {
    Die(absl::StrCat("--", name, "=", flag, " is out of range; write a value in ",
                     std::string(name) == "mbuf-cache" ? 0 : 1, "..", max));
  }
  *out = static_cast<T>(flag);
}

// Flags override the config file. Every bad value stops start-up with what to write instead.
void ApplyFlags(EngineConfig& c) {
  if (const std::string m = absl::GetFlag(FLAGS_mode); !m.empty()) {
    auto mode = ParseMode(m);
    if (!mode.ok())
      Die(absl::StrCat("--mode=", m, ": unknown mode; write --mode=io, --mode=mac or --mode=l3"));
    c.mode = *mode;
  }
  if (const std::string s = absl::GetFlag(FLAGS_strategy); !s.empty()) c.strategy = s;
  if (const std::string p = absl::GetFlag(FLAGS_pool_ops); !p.empty()) c.pool_ops = p;
  if (c.pool_ops != "skbnf" && c.pool_ops != "ring_mp_mc") {
    Die(absl::StrCat("--pool-ops=", c.pool_ops,
                     ": unknown; write --pool-ops=skbnf or --pool-ops=ring_mp_mc"));
  }
  if (c.pool_ops == "skbnf") {
    auto spec = pool::StrategySpec::Parse(c.strategy);
    if (!spec.ok()) {
      Die(absl::StrCat("--strategy=", c.strategy, ": ", spec.status().message(),
                       "; write e.g. --strategy=magazine or --strategy=recycle+headpool"));
    }
  } else if (!absl::GetFlag(FLAGS_strategy).empty()) {
    Die("--strategy applies to --pool-ops=skbnf; the ring_mp_mc baseline has DPDK's own cache: "
        "write --mbuf-cache=N instead");
  }
  if (c.pool_ops == "skbnf" && absl::GetFlag(FLAGS_mbuf_cache) >= 0) {
    Die("--mbuf-cache applies to --pool-ops=ring_mp_mc; skbnf pools run with DPDK's cache at 0. "
        "For DPDK's cache algorithm as one of our layers write --strategy=lcache:size=N+...");
  }
  Override(absl::GetFlag(FLAGS_mbuf_cache), 512, "mbuf-cache", &c.mbuf_cache);
  Override(absl::GetFlag(FLAGS_mbufs), int64_t{1} << 26, "mbufs", &c.mbufs);
  Override(absl::GetFlag(FLAGS_burst), 512, "burst", &c.burst);
  Override(absl::GetFlag(FLAGS_rx_ring), 32768, "rx-ring", &c.rx_ring);
  Override(absl::GetFlag(FLAGS_tx_ring), 32768, "tx-ring", &c.tx_ring);
  Override(absl::GetFlag(FLAGS_rx_queues), 64, "rx-queues", &c.rx_queues);
  for (absl::string_view spec :
       absl::StrSplit(absl::GetFlag(FLAGS_swap_cycle), ';', absl::SkipEmpty())) {
    if (c.pool_ops != "skbnf") {
      Die("--swap-cycle needs --pool-ops=skbnf: DPDK's ring_mp_mc pool cannot be swapped");
    }
    auto parsed = pool::StrategySpec::Parse(spec);
    if (!parsed.ok()) {
      Die(absl::StrCat("--swap-cycle: '", spec, "': ", parsed.status().message(),
                       "; write specs separated by ';', e.g. --swap-cycle='headpool;magazine'"));
    }
  }
  if (absl::GetFlag(FLAGS_swap_every) <= 0) Die("--swap-every must be > 0 seconds");
  if (absl::GetFlag(FLAGS_colour)) c.colour = true;
  if (absl::GetFlag(FLAGS_pool_debug)) c.pool_debug = true;
}

struct Demo {
  std::filesystem::path dir;
  ~Demo() {
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
};

// Builds the demo: EAL arguments, ports, workers, routes, and the pcap it replays.
void SetUpDemo(DaemonConfig& dc, Demo& demo) {
  const int routes = absl::GetFlag(FLAGS_demo_routes);
  const int dests = absl::GetFlag(FLAGS_demo_dests);
  if (routes < 1 || dests < 1) Die("--demo-routes and --demo-dests must be >= 1");
  demo.dir = std::filesystem::temp_directory_path() / absl::StrCat("skbnfd-demo-", getpid());
  std::filesystem::create_directories(demo.dir);
  g_demo_dir = demo.dir;
  const std::string pcap = (demo.dir / "traffic.pcap").string();
  EngineConfig& c = dc.engine;
  c.mode = Mode::kL3;
  c.routes = RandomRoutes(static_cast<uint32_t>(routes), "net_null0", 1);
  std::vector<std::pair<uint32_t, uint8_t>> prefixes;
  for (const RouteSpec& r : c.routes) {
    uint32_t p;
    uint8_t d;
    if (ParsePrefix(r.prefix, &p, &d).ok()) prefixes.emplace_back(p, d);
  }
  if (absl::Status st = WritePcap(pcap, DemoFrames(static_cast<uint32_t>(dests), prefixes, 2));
      !st.ok()) {
    Die(std::string(st.message()));
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
            "--vdev=net_null0"};
  c.ports = {PortSpec{"net_pcap0", "net_null0", ""}, PortSpec{"net_null0", "net_pcap0", ""}};
  c.workers = {WorkerSpec{1, {{"net_pcap0", 0}}}};
  std::printf(
      "skbnfd demo: l3 over %zu generated prefixes (10.0.0.0/8, /16../24), %d destinations "
      "replayed from %s by net_pcap (infinite_rx), sink net_null0. Ctrl-C stops.\n",
      c.routes.size(), dests, pcap.c_str());
}

std::string Rate(double v) {
  if (v >= 1e6) return absl::StrFormat("%.2fM", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("%.1fk", v / 1e3);
  return absl::StrFormat("%.0f", v);
}

int Run(int argc, char** argv) {
  // First thing: a SIGINT/SIGTERM during start-up means "stop as soon as running" (and a
  // shell's background job would otherwise inherit SIGINT ignored).
  std::signal(SIGINT, &OnSignal);
  std::signal(SIGTERM, &OnSignal);
  absl::SetProgramUsageMessage(
      "skbnfd [flags] [-- EAL arguments]; with neither, runs the demo (see --helpfull)");
  // Flag names are written with dashes (--pool-ops) or underscores (--pool_ops): absl
  // knows the latter, so dashes in names before `--` become underscores.
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
    std::string& a = args[i];
    if (a.rfind("--", 0) != 0) continue;
    const size_t end = std::min(a.find('='), a.size());
    for (size_t j = 2; j < end; ++j) {
      if (a[j] == '-') a[j] = '_';
    }
  }
  std::vector<char*> argv2;
  for (std::string& a : args) argv2.push_back(a.data());
  argv2.push_back(nullptr);
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv2.data());
  DaemonConfig dc;
  const std::string config_path = absl::GetFlag(FLAGS_config);
  if (!config_path.empty()) {
    auto loaded = LoadConfig(config_path);
    if (!loaded.ok()) Die(std::string(loaded.status().message()));
    dc = *loaded;
  }
  {
    EngineConfig check = dc.engine;  // bad flags stop start-up before anything else happens
    ApplyFlags(check);
  }
  std::vector<std::string> pci_args;
  if (absl::GetFlag(FLAGS_pcidevice_env)) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    auto from_env = EalArgsFromPciDeviceEnv(env);
    if (!from_env.ok()) Die(std::string(from_env.status().message()));
    if (from_env->empty()) Die("--pcidevice-env: no PCIDEVICE_* variable names a device");
    pci_args = *from_env;
  }
  Demo demo;
  const bool is_demo = config_path.empty() && rest.size() <= 1 && pci_args.empty();
  if (is_demo) SetUpDemo(dc, demo);
  ApplyFlags(dc.engine);

  std::vector<std::string> eal_args = {argv[0]};
  eal_args.insert(eal_args.end(), dc.eal.begin(), dc.eal.end());
  eal_args.insert(eal_args.end(), pci_args.begin(), pci_args.end());
  for (size_t i = 1; i < rest.size(); ++i) eal_args.emplace_back(rest[i]);
  std::vector<char*> eal_argv;
  for (std::string& s : eal_args) eal_argv.push_back(s.data());
  std::atexit(&RemoveRuntimeDir);
  if (rte_eal_init(static_cast<int>(eal_argv.size()), eal_argv.data()) < 0) {
    Die(absl::StrCat("EAL initialisation failed (", rte_strerror(rte_errno),
                     "); check the EAL arguments after `--`"));
  }
  g_runtime_dir = rte_eal_get_runtime_dir();
  auto created = Engine::Create(dc.engine);
  if (!created.ok()) {
    std::fprintf(stderr, "skbnfd: %s\n", std::string(created.status().message()).c_str());
    rte_eal_cleanup();
    return 2;
  }
  Engine& engine = **created;
  for (const PortInfo& p : engine.Ports()) {
    std::printf("port %u %s (%s) mac %s peer %d rxq %u txq %u%s rings %u/%u\n", p.id,
                p.name.c_str(), p.driver.c_str(), p.mac.c_str(), p.peer, p.rx_queues, p.tx_queues,
                p.tx_shared ? " (shared)" : "", p.rx_ring, p.tx_ring);
  }
  if (absl::Status st = engine.Start(); !st.ok()) {
    std::fprintf(stderr, "skbnfd: %s\n", std::string(st.message()).c_str());
    return 2;
  }
#if SKBNF_WITH_CONTROL
  // Control plane (gRPC skbnf.v1 + health + reflection, Prometheus /metrics): server/.
  skbnf::control::EngineBackend control_backend(engine, eal_args, rte_get_main_lcore());
  auto control =
      skbnf::control::ControlPlane::Start(control_backend, skbnf::control::OptionsFromFlags());
  if (!control.ok()) {
    std::fprintf(stderr, "skbnfd: %s\n", std::string(control.status().message()).c_str());
    (void)engine.Stop();
    return 2;
  }
#endif
  for (const PortInfo& p : engine.Ports()) {
    std::printf("port %u link %s %u Mbps\n", p.id, p.link_up ? "up" : "down", p.link_speed_mbps);
  }
  std::printf("mode %s, pool %s, strategy %s, workers on lcores", ModeName(dc.engine.mode),
              dc.engine.pool_ops.c_str(), engine.strategy().c_str());
  for (unsigned lc : engine.WorkerLcores()) std::printf(" %u", lc);
  std::printf(", %zu routes\n", engine.Routes().size());
  std::fflush(stdout);

  const double stats = absl::GetFlag(FLAGS_stats);
  const double duration = absl::GetFlag(FLAGS_duration);
  const auto t0 = std::chrono::steady_clock::now();
  auto next = t0 + std::chrono::duration<double>(stats > 0 ? stats : 1e9);
  EngineSnapshot prev = engine.Snapshot();
  const std::vector<std::string> cycle =
      absl::StrSplit(absl::GetFlag(FLAGS_swap_cycle), ';', absl::SkipEmpty());
  const auto swap_every = std::chrono::duration<double>(absl::GetFlag(FLAGS_swap_every));
  auto next_swap = t0 + swap_every;
  size_t swap_index = 0;
  while (!g_quit.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto now = std::chrono::steady_clock::now();
    if (duration > 0 && now - t0 >= std::chrono::duration<double>(duration)) break;
    if (!cycle.empty() && now >= next_swap) {
      next_swap += swap_every;
      auto rep = engine.SwapStrategy(cycle[swap_index++ % cycle.size()]);
      if (!rep.ok()) {
        std::printf("swap: %s\n", std::string(rep.status().message()).c_str());
      } else {
        std::string cores;
        for (const pool::CoreSwapResult& r : rep->cores) {
          absl::StrAppend(&cores, " lcore ", r.core, r.on_behalf ? " (parked)" : "", ": ",
                          r.acknowledged ? "ack" : "NO ACK", " ", r.quiesce_ns / 1000, " us, ",
                          r.objects_flushed, " flushed;");
        }
        std::printf("swap %s: %s -> %s, epoch %lu, %lu us;%s %lu from retired depots\n",
                    rep->status.ok() ? "ok" : "FAILED", rep->old_spec.c_str(),
                    rep->new_spec.c_str(), static_cast<unsigned long>(rep->epoch),
                    static_cast<unsigned long>(rep->total_ns / 1000), cores.c_str(),
                    static_cast<unsigned long>(rep->depot_drained));
        if (!rep->status.ok()) std::printf("  %s\n", std::string(rep->status.message()).c_str());
      }
      std::fflush(stdout);
    }
    if (stats <= 0 || now < next) continue;
    next += std::chrono::duration<double>(stats);
    EngineSnapshot cur = engine.Snapshot();
    const double dt = static_cast<double>(cur.monotonic_ns - prev.monotonic_ns) / 1e9;
    for (size_t i = 0; i < cur.workers.size(); ++i) {
      const WorkerSnapshot& a = prev.workers[i];
      const WorkerSnapshot& b = cur.workers[i];
      std::string pool = b.has_pool
                             ? absl::StrCat("alloc/s ", Rate((b.pool.allocs - a.pool.allocs) / dt),
                                            " free/s ", Rate((b.pool.frees - a.pool.frees) / dt))
                             : "alloc/s - free/s -";
      std::printf("lcore %u: rx %s pps, tx %s pps, %s, drops/s %s, nombuf %lu%s, strategy %s\n",
                  b.lcore, Rate((b.rx_pkts - a.rx_pkts) / dt).c_str(),
                  Rate((b.tx_pkts - a.tx_pkts) / dt).c_str(), pool.c_str(),
                  Rate((b.dropped - a.dropped) / dt).c_str(),
                  static_cast<unsigned long>(b.rx_nombuf), b.paused ? ", paused" : "",
                  cur.strategy.c_str());
    }
    std::fflush(stdout);
    prev = std::move(cur);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
#if SKBNF_WITH_CONTROL
  (*control)->Shutdown();  // before the engine stops
#endif
  (void)engine.Stop();
  EngineSnapshot last = engine.Snapshot();
  uint64_t rx = 0, tx = 0, nombuf = 0;
  uint64_t drops[kNumDropReasons] = {};
  for (const WorkerSnapshot& w : last.workers) {
    rx += w.rx_pkts;
    tx += w.tx_pkts;
    nombuf += w.rx_nombuf;
    for (int r = 0; r < kNumDropReasons; ++r) drops[r] += w.drops[r];
  }
  std::string d;
  for (int r = 0; r < kNumDropReasons; ++r)
    absl::StrAppend(&d, " ", DropReasonName(r), "=", drops[r]);
  const AuditResult& audit = engine.final_audit();
  std::string swaps = engine.pool() != nullptr
                          ? absl::StrCat("swaps ok ", engine.pool()->swaps_ok(), " failed ",
                                         engine.pool()->swaps_failed())
                          : "swaps n/a";
  std::printf(
      "skbnfd: %.1f s, rx %lu, tx %lu, drops%s, rx_nombuf %lu, strategy %s, %s; audit %s (%s)\n",
      secs, static_cast<unsigned long>(rx), static_cast<unsigned long>(tx), d.c_str(),
      static_cast<unsigned long>(nombuf), engine.strategy().c_str(), swaps.c_str(),
      audit.ok ? "OK" : "FAILED", audit.message.c_str());
  std::fflush(stdout);
  const int rc = audit.ok ? 0 : 1;
  created->reset();
  rte_eal_cleanup();
  return rc;
}

}  // namespace
}  // namespace skbnf::dpdk

int main(int argc, char** argv) { return skbnf::dpdk::Run(argc, argv); }
