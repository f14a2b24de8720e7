// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/daemon_flags.h"

#include <unistd.h>

#include <cstdio>
#include <optional>
#include <set>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dataplane/pool/slab_store.h"
#include "dataplane/pool/strategy_spec.h"
#include "server/daemon/console.h"
#include "server/daemon/native_twin.h"
#include "server/ops/network_status.h"

ABSL_FLAG(std::string, config, "",
          "Configuration file, one directive a line (eal, port, worker, route, mode, strategy, "
          "...; the commented example: skbnfd.conf.example in server/daemon/ of the source). The "
          "flags below override it at start. skbnfd watches it (and takes SIGHUP): a changed "
          "strategy or route table is applied while running, a bad file is refused whole.");
ABSL_FLAG(std::string, mode, "", "Forwarding mode: io, mac or l3 (default io; demo: l3).");
ABSL_FLAG(std::string, strategy, "",
          "Buffer strategy spec, e.g. magazine, recycle+headpool, lcache+magazine:size=64,prefetch "
          "(default magazine; skbnf pool only).");
ABSL_FLAG(std::string, pool_ops, "",
          "Mempool ops: skbnf (the buffer core, strategies swappable) or ring_mp_mc (DPDK's "
          "native pool with its lcore cache: the baseline).");
ABSL_FLAG(int32_t, mbuf_cache, -1,
          "DPDK lcore cache size for --pool-ops=ring_mp_mc (default 256).");
ABSL_FLAG(int64_t, mbufs, -1, "Mbufs in the pool (default: sized from the rings).");
ABSL_FLAG(int32_t, burst, -1, "RX/TX burst size (default 32).");
ABSL_FLAG(int32_t, rx_ring, -1, "RX descriptors per queue (default 1024).");
ABSL_FLAG(int32_t, tx_ring, -1, "TX descriptors per queue (default 1024).");
ABSL_FLAG(int32_t, rx_queues, -1, "RX queues per port (default 1).");
ABSL_FLAG(int64_t, latency_sample_every, -1,
          "Packet latency: time 1 in N RX bursts (every packet of it); 0 off (default 256; "
          "`skbnfctl latency set` changes it while skbnfd runs).");
ABSL_FLAG(int64_t, slow_iteration_us, -1,
          "Poll-loop iterations longer than this many microseconds are logged with their cause "
          "(default 250).");
ABSL_FLAG(bool, colour, false, "Slab colouring in the skbnf pool.");
ABSL_FLAG(bool, pool_debug, false, "The pool's double/foreign-free checks (slower).");
ABSL_FLAG(std::string, pool_flags, "",
          "Mempool flags for --pool-ops=ring_mp_mc (DPDK's own pool), comma-separated; the one "
          "known: no_iova_contig (RTE_MEMPOOL_F_NO_IOVA_CONTIG: DPDK packs the mbufs one element "
          "apart on 4 KiB pages too, instead of one per page), e.g. "
          "--pool-flags=no_iova_contig. A benchmark/diagnostic knob (bench/run layout), not a "
          "production setting: such a pool's buffers may cross a page, so they are not "
          "IOVA-contiguous, and DPDK gives them no IO address (RTE_BAD_IOVA): fine for virtual "
          "PMDs, wrong for a real NIC's DMA, so it is refused unless every port is a vdev.");
ABSL_FLAG(int64_t, store_stride, -1,
          "skbnf's slab store places its objects N bytes apart instead of packed (0, the "
          "default): a multiple of 64 from the mbuf element size (2,368 bytes with the default "
          "data room; checked at start) to 65536, e.g. --store-stride=4096 (one mbuf per 4 KiB "
          "page, as DPDK lays its pool out on --no-huge). A benchmark/diagnostic knob (bench/run "
          "layout); --pool-ops=skbnf only.");
ABSL_FLAG(bool, pcidevice_env, false,
          "Add `-a <addr>` EAL arguments for every PCI address in PCIDEVICE_* environment "
          "variables (the Kubernetes SR-IOV device plugin's), e.g. VFs bound to vfio-pci. The "
          "plugin's PCIDEVICE_*_INFO device information is read by the preflight, not as "
          "addresses.");
ABSL_FLAG(std::string, network_status_file, "",
          "The pod's Multus k8s.v1.cni.cncf.io/network-status annotation as a downward-API file "
          "(e.g. /etc/podnetinfo/network-status): config lines `port net=<network>` (and "
          "net=<network> wherever a port is named) take that network's PCI address from it. "
          "<network> is name or namespace/name, @<interface> for one of two attachments.");
ABSL_FLAG(absl::Duration, network_status_timeout, absl::Seconds(30),
          "How long to wait at start for --network-status-file while it is missing or empty (the "
          "annotation can land after the container starts), e.g. 30s or 2m; then start-up is "
          "refused naming the file.");

namespace skbnf::control {
namespace {

template <typename T>
absl::Status Override(int64_t flag, int64_t max, const char* name, T* out) {
  if (flag < 0) return absl::OkStatus();
  const bool zero_ok = std::string(name) == "mbuf-cache";
  if (flag > max || (flag == 0 && !zero_ok)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, "=", flag, " is out of range; write a value in ", zero_ok ? 0 : 1, "..", max));
  }
  *out = static_cast<T>(flag);
  return absl::OkStatus();
}

// --pool-flags and --store-stride (issue 23's layout control), after --pool-ops is known.
absl::Status ApplyLayoutFlags(dpdk::EngineConfig& c) {
  if (const std::string text = absl::GetFlag(FLAGS_pool_flags); !text.empty()) {
    for (absl::string_view f : absl::StrSplit(text, ',')) {
      if (f != "no_iova_contig") {
        return absl::InvalidArgumentError(
            absl::StrCat("--pool-flags=", text, ": unknown flag '", f,
                         "'; write --pool-flags=no_iova_contig (the one known) or leave it out"));
      }
      c.no_iova_contig = true;
    }
    if (c.pool_ops != dpdk::PoolOps::kRingMpMc) {
      return absl::InvalidArgumentError(
          "--pool-flags sets DPDK's mempool flags and applies to --pool-ops=ring_mp_mc: write "
          "--pool-ops=ring_mp_mc --pool-flags=no_iova_contig; skbnf's store lays out its own "
          "objects (--store-stride=N)");
    }
  }
  const int64_t stride = absl::GetFlag(FLAGS_store_stride);
  if (stride == -1) return absl::OkStatus();
  if (c.pool_ops != dpdk::PoolOps::kSkbnf) {
    return absl::InvalidArgumentError(
        "--store-stride lays out skbnf's slab store and applies to --pool-ops=skbnf; for DPDK's "
        "own pool packed write --pool-flags=no_iova_contig");
  }
  constexpr int64_t kLine = 64, kMax = pool::SlabStoreConfig::kMaxStride;
  if (stride < 0 || stride % kLine != 0 || stride > kMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("--store-stride=", stride, ": write 0 (packed, the default) or a multiple of ",
                     kLine, " from the mbuf element size to ", kMax, ", e.g. --store-stride=4096"));
  }
  c.store_stride = static_cast<uint32_t>(stride);
  return absl::OkStatus();
}

}  // namespace

bool HasConfigFile() { return !absl::GetFlag(FLAGS_config).empty(); }
std::string ConfigPath() { return absl::GetFlag(FLAGS_config); }

absl::StatusOr<dpdk::DaemonConfig> ConfigFromFlags() {
  const std::string path = absl::GetFlag(FLAGS_config);
  if (path.empty()) return dpdk::DaemonConfig{};
  absl::StatusOr<dpdk::DaemonConfig> dc = dpdk::LoadConfig(path);
  if (!dc.ok()) return dc;
  if (absl::Status st = ResolveNetworkPorts(*dc); !st.ok()) {
    return absl::Status(st.code(), absl::StrCat(path, ": ", st.message()));
  }
  return dc;
}

absl::Status ResolveNetworkPorts(dpdk::DaemonConfig& dc) {
  if (!dpdk::UsesPortNetworks(dc)) return absl::OkStatus();
  const std::string file = absl::GetFlag(FLAGS_network_status_file);
  if (file.empty()) {
    return absl::InvalidArgumentError(
        "a port is named by network (net=...): give skbnfd the pod's Multus network-status with "
        "--network-status-file=/etc/podnetinfo/network-status (a downwardAPI volume of "
        "metadata.annotations['k8s.v1.cni.cncf.io/network-status'])");
  }
  // Read once, the first time (start-up waits for it); reloads resolve against the same status,
  // which does not change while the pod lives.
  static absl::Mutex mu(absl::kConstInit);
  static std::optional<absl::StatusOr<std::vector<preflight::NetworkAttachment>>> status;
  absl::MutexLock lock(&mu);
  if (!status) {
    const absl::Duration timeout = absl::GetFlag(FLAGS_network_status_timeout);
    if (timeout < absl::ZeroDuration()) {
      return absl::InvalidArgumentError(
          "--network-status-timeout must not be negative; write e.g. --network-status-timeout=30s");
    }
    status = preflight::ReadNetworkStatusFile(file, timeout);
  }
  if (!status->ok()) return status->status();
  const std::vector<preflight::NetworkAttachment>& networks = **status;
  static std::set<std::string> told;  // each mapping said once, at start (not on every reload)
  return dpdk::ResolvePortNetworks(dc, [&](absl::string_view network) {
    absl::StatusOr<std::string> a = preflight::PciAddressOfNetwork(networks, network);
    if (!a.ok()) {
      return absl::StatusOr<std::string>(
          absl::Status(a.status().code(),
                       absl::StrCat(a.status().message(), " (--network-status-file=", file, ")")));
    }
    if (told.insert(std::string(network)).second) {
      std::fprintf(stderr, "skbnfd: port net=%s is %s (network-status)\n",
                   std::string(network).c_str(), a->c_str());
    }
    return a;
  });
}

absl::Status ApplyEngineFlags(dpdk::EngineConfig& c) {
  if (const std::string m = absl::GetFlag(FLAGS_mode); !m.empty()) {
    auto mode = dpdk::ParseForwardingMode(m);
    if (!mode.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mode=", m, ": unknown mode; write --mode=io, --mode=mac or --mode=l3"));
    }
    c.mode = *mode;
  }
  if (const std::string p = absl::GetFlag(FLAGS_pool_ops); !p.empty()) {
    absl::StatusOr<dpdk::PoolOps> ops = dpdk::ParsePoolOps(p);  // parsed once, here
    if (!ops.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--pool-ops=", p, ": unknown; write --pool-ops=skbnf or --pool-ops=ring_mp_mc"));
    }
    c.pool_ops = *ops;
  }
  // --strategy: parsed once, here (the config file's line is parsed by server/ops/config.cc);
  // the spec travels down to the pool as is (EngineConfig::strategy).
  if (const std::string s = absl::GetFlag(FLAGS_strategy); !s.empty()) {
    if (c.pool_ops != dpdk::PoolOps::kSkbnf) {
      return absl::InvalidArgumentError(
          "--strategy applies to --pool-ops=skbnf; the ring_mp_mc baseline has DPDK's own cache: "
          "write --mbuf-cache=N instead");
    }
    absl::StatusOr<pool::StrategySpec> spec = pool::StrategySpec::Parse(s);
    if (!spec.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--strategy=", s, ": ", spec.status().message(),
                       "; write e.g. --strategy=magazine or --strategy=recycle+headpool"));
    }
    c.strategy = *spec;
  }
  c.native_twin = c.native_twin || NativeTwinRequested();
  if (c.native_twin && c.pool_ops != dpdk::PoolOps::kSkbnf) {
    return absl::InvalidArgumentError(
        "--native-twin puts DPDK's pool beside skbnf's: it needs --pool-ops=skbnf (the twin's "
        "lcore cache is --mbuf-cache)");
  }
  if (c.pool_ops == dpdk::PoolOps::kSkbnf && !c.native_twin &&
      absl::GetFlag(FLAGS_mbuf_cache) >= 0) {
    return absl::InvalidArgumentError(
        "--mbuf-cache applies to --pool-ops=ring_mp_mc (or the --native-twin pool); skbnf pools "
        "run with DPDK's cache at 0. For DPDK's cache algorithm as one of our layers write "
        "--strategy=lcache:size=N+...");
  }
  for (absl::Status st :
       {Override(absl::GetFlag(FLAGS_mbuf_cache), 512, "mbuf-cache", &c.mbuf_cache),
        Override(absl::GetFlag(FLAGS_mbufs), int64_t{1} << 26, "mbufs", &c.mbufs),
        Override(absl::GetFlag(FLAGS_burst), 512, "burst", &c.burst),
        Override(absl::GetFlag(FLAGS_rx_ring), 32768, "rx-ring", &c.rx_ring),
        Override(absl::GetFlag(FLAGS_tx_ring), 32768, "tx-ring", &c.tx_ring),
        Override(absl::GetFlag(FLAGS_rx_queues), 64, "rx-queues", &c.rx_queues)}) {
    if (!st.ok()) return st;
  }
  if (const int64_t n = absl::GetFlag(FLAGS_latency_sample_every); n >= 0) {
    if (n > dpdk::kMaxSampleEvery) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--latency-sample-every=", n, " is out of range; write 0 (off) or 1..",
          dpdk::kMaxSampleEvery, " (1 in N RX bursts timed)"));
    }
    c.latency.sample_every = static_cast<uint32_t>(n);
  }
  if (absl::Status st = Override(absl::GetFlag(FLAGS_slow_iteration_us),
                                 dpdk::kMaxSlowIterationUs, "slow-iteration-us",
                                 &c.latency.slow_iteration_us);
      !st.ok()) {
    return st;
  }
  if (absl::Status st = CheckSwapCycle(c.pool_ops); !st.ok()) return st;
  if (absl::Status st = ApplyLayoutFlags(c); !st.ok()) return st;
  if (absl::GetFlag(FLAGS_colour)) c.colour = true;
  if (absl::GetFlag(FLAGS_pool_debug)) c.pool_debug = true;
  return absl::OkStatus();
}

bool PciDeviceEnvFlag() { return absl::GetFlag(FLAGS_pcidevice_env); }

absl::StatusOr<std::vector<std::string>> PciDeviceEalArgs() {
  if (!absl::GetFlag(FLAGS_pcidevice_env)) return std::vector<std::string>{};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  auto from_env = dpdk::EalArgsFromPciDeviceEnv(env);
  if (!from_env.ok()) return from_env.status();
  if (from_env->empty()) {
    return absl::InvalidArgumentError("--pcidevice-env: no PCIDEVICE_* variable names a device");
  }
  return *from_env;
}

}  // namespace skbnf::control
