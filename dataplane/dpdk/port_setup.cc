// SPDX-License-Identifier: BSD-3-Clause
// Engine ports: which ethdev ports the engine uses and how they pair (io/mac), their queues and
// rings, and what Engine::Ports() reports of them (link, PMD counters).
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memory.h>
#include <rte_ring.h>

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/engine_state.h"

namespace skbnf::dpdk {

absl::StatusOr<uint16_t> Engine::Impl::ResolvePort(absl::string_view name) const {
  uint16_t id = 0;
  if (rte_eth_dev_get_port_by_name(std::string(name).c_str(), &id) == 0) return id;
  uint32_t n = 0;
  if (absl::SimpleAtoi(name, &n) && n < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(n)) {
    return static_cast<uint16_t>(n);
  }
  std::string known;
  uint16_t pid;
  RTE_ETH_FOREACH_DEV(pid) {
    char buf[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(pid, buf) == 0) {
      absl::StrAppend(&known, known.empty() ? "" : ", ", pid, "=", buf);
    }
  }
  return absl::NotFoundError(
      absl::StrCat("no port '", name, "' (ports: ", known.empty() ? "none" : known, ")"));
}

absl::Status Engine::Impl::SelectPorts() {
  std::vector<std::pair<uint16_t, std::string>> peers;
  if (config.ports.empty()) {
    uint16_t pid;
    RTE_ETH_FOREACH_DEV(pid) { port_ids.push_back(pid); }
    for (size_t i = 0; i < port_ids.size(); ++i) {
      peers.emplace_back(port_ids[i], "");
    }
  } else {
    for (const PortSpec& ps : config.ports) {
      auto id = ResolvePort(ps.name);
      if (!id.ok()) return id.status();
      if (std::find(port_ids.begin(), port_ids.end(), *id) != port_ids.end()) {
        return absl::InvalidArgumentError(absl::StrCat("port '", ps.name, "' is listed twice"));
      }
      port_ids.push_back(*id);
      peers.emplace_back(*id, ps.peer);
    }
  }
  if (port_ids.empty()) {
    return absl::FailedPreconditionError(
        "no ports: give EAL a device, e.g. after `--`: --vdev=net_null0 --vdev=net_null1, or a "
        "PCI address with -a");
  }
  for (uint16_t id : port_ids) {
    if (id >= kMaxPorts) {
      return absl::InvalidArgumentError(absl::StrCat("port id ", id, " >= ", kMaxPorts));
    }
    ports[id].active = true;
    ports[id].id = id;
  }
  // Pairing: explicit peers, else 0<->1, 2<->3, ... in config order; an odd last port
  // forwards to itself.
  for (size_t i = 0; i < peers.size(); ++i) {
    PortState& ps = ports[peers[i].first];
    if (!peers[i].second.empty()) {
      auto peer = ResolvePort(peers[i].second);
      if (!peer.ok()) return peer.status();
      if (*peer >= kMaxPorts || !ports[*peer].active) {
        return absl::InvalidArgumentError(absl::StrCat("peer '", peers[i].second, "' of port ",
                                                       ps.id, " is not one of the engine's ports"));
      }
      ps.peer = *peer;
    } else {
      const size_t j = (i % 2 == 0) ? (i + 1 < peers.size() ? i + 1 : i) : i - 1;
      ps.peer = port_ids[j];
    }
  }
  for (size_t i = 0; i < config.ports.size(); ++i) {
    PortState& ps = ports[port_ids[i]];
    if (!config.ports[i].dst_mac.empty()) {
      auto mac = net::ParseMac(config.ports[i].dst_mac);
      if (!mac.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("port '", config.ports[i].name, "' dst_mac: ", mac.status().message()));
      }
      std::copy(mac->begin(), mac->end(), ps.dst_mac.addr_bytes);
    }
  }
  for (uint16_t id : port_ids) {
    PortState& ps = ports[id];
    if (config.ports.empty() || std::all_of(ps.dst_mac.addr_bytes, ps.dst_mac.addr_bytes + 6,
                                            [](uint8_t b) { return b == 0; })) {
      ps.dst_mac = rte_ether_addr{{0x02, 0, 0, 0, 0, static_cast<uint8_t>(id)}};
    }
  }
  return absl::OkStatus();
}

absl::Status Engine::Impl::SetUpPorts() {
  const uint16_t nworkers = static_cast<uint16_t>(workers.size());
  for (uint16_t id : port_ids) {
    PortState& ps = ports[id];
    rte_eth_dev_info info{};
    if (int rc = rte_eth_dev_info_get(id, &info); rc != 0) {
      return absl::InternalError(absl::StrCat("port ", id, ": dev_info: ", rte_strerror(-rc)));
    }
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(id, name);
    ps.name = name;
    ps.driver = info.driver_name != nullptr ? info.driver_name : "";
    ps.device = info.device != nullptr ? rte_dev_name(info.device) : "";
    ps.xdp_if_index = ps.driver == "net_af_xdp" ? info.if_index : 0;
    ps.nb_rxq = 0;
    for (const auto& w : workers) {
      for (const auto* list : {&w->rx, &w->twin_rx}) {
        for (const RxQueue& q : *list) {
          if (q.port == id) ps.nb_rxq = std::max<uint16_t>(ps.nb_rxq, q.queue + 1);
        }
      }
    }
    if (ps.nb_rxq > info.max_rx_queues) {
      return absl::InvalidArgumentError(absl::StrCat("port ", id, " (", ps.name, ") has ",
                                                     info.max_rx_queues, " RX queue(s); ",
                                                     ps.nb_rxq, " asked"));
    }
    // TX: one queue per worker, or one shared queue when the PMD has fewer.
    bool needs_tx = config.mode == ForwardingMode::kL3;
    for (const auto& w : workers) {
      for (const RxQueue& q : w->rx) needs_tx |= ports[q.port].peer == id;
    }
    if (info.max_tx_queues == 0 || !needs_tx) {
      if (needs_tx && config.mode != ForwardingMode::kL3) {
        return absl::InvalidArgumentError(
            absl::StrCat("port ", id, " (", ps.name, ") cannot transmit but is a peer"));
      }
      ps.nb_txq = 0;
    } else if (info.max_tx_queues >= nworkers) {
      ps.nb_txq = nworkers;
    } else {
      ps.nb_txq = 1;
      ps.tx_shared = nworkers > 1;
    }
    rte_eth_conf conf{};
    if (ps.nb_rxq > 1 && !config.native_twin && info.flow_type_rss_offloads != 0) {
      // Several RX queues: spread flows over them by RSS (IP and L4 hashes the NIC has).
      conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
      conf.rx_adv_conf.rss_conf.rss_hf =
          (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
    }
    // Link-state interrupts wherever the PMD has them, as dpdk-testpmd does by default
    // (app/test-pmd/testpmd.c: intr_conf.lsc = 1 when dev_flags has RTE_ETH_DEV_INTR_LSC). Not
    // for the events (skbnfd polls the link): so that the PMD's own stop/close take down the
    // interrupt callback it may register. net_virtio_user in server mode registers
    // virtio_interrupt_handler on its socket when the vhost peer goes away and comes back
    // (DPDK 22.11 virtio_user_dev.c: virtio_user_dev_delayed_disconnect_handler and the
    // reconnect's reconfig alarm), whatever intr_conf says; but virtio_dev_stop unregisters it
    // only when intr_conf.lsc is set, and virtio_user_dev_uninit then frees the interrupt
    // handle under a live callback: skbnfd died with SIGSEGV in eal-intr-thread on every SIGTERM
    // after an Open vSwitch restart (issue 34 item 1).
    if (info.dev_flags != nullptr && (*info.dev_flags & RTE_ETH_DEV_INTR_LSC) != 0) {
      conf.intr_conf.lsc = 1;
    }
    if (int rc = rte_eth_dev_configure(id, ps.nb_rxq, ps.nb_txq, &conf); rc != 0) {
      return absl::InternalError(
          absl::StrCat("port ", id, " (", ps.name, "): configure: ", rte_strerror(-rc)));
    }
    uint16_t nrx = config.rx_ring, ntx = config.tx_ring;
    if (int rc = rte_eth_dev_adjust_nb_rx_tx_desc(id, &nrx, &ntx); rc != 0) {
      return absl::InternalError(absl::StrCat("port ", id, ": ring sizes: ", rte_strerror(-rc)));
    }
    ps.rx_ring = nrx;
    ps.tx_ring = ntx;
    ps.socket_id = rte_eth_dev_socket_id(id);
    const int socket = ps.socket_id < 0 ? static_cast<int>(rte_socket_id()) : ps.socket_id;
    const bool af_xdp = ps.driver == "net_af_xdp";
    ps.xsk_inodes.clear();
    const uint64_t out0 = OtherOut();  // net_af_xdp fills its rings here
    for (uint16_t q = 0; q < ps.nb_rxq; ++q) {
      // net_af_xdp creates queue q's XDP socket here: the new inode is this port's
      // (af_xdp_rings.cc).
      const std::set<uint64_t> before = af_xdp ? XdpSocketInodes() : std::set<uint64_t>{};
      // Native twin queues (q >= rx_queues) take DPDK's pool (EngineConfig::native_twin).
      rte_mempool* qmp = q >= config.rx_queues && twin_mp != nullptr ? twin_mp : mp;
      if (int rc = rte_eth_rx_queue_setup(id, q, nrx, socket, nullptr, qmp); rc != 0) {
        return absl::InternalError(
            absl::StrCat("port ", id, " (", ps.name, "): RX queue ", q, ": ", rte_strerror(-rc)));
      }
      if (af_xdp) {
        for (uint64_t ino : XdpSocketInodes()) {
          if (before.count(ino) == 0) ps.xsk_inodes.push_back(ino);
        }
      }
    }
    Book(id, out0);
    for (uint16_t q = 0; q < ps.nb_txq; ++q) {
      if (int rc = rte_eth_tx_queue_setup(id, q, ntx, socket, nullptr); rc != 0) {
        return absl::InternalError(
            absl::StrCat("port ", id, " (", ps.name, "): TX queue ", q, ": ", rte_strerror(-rc)));
      }
    }
    // The source MAC of everything mac and l3 send out of this port. DPDK 22.11's
    // rte_eth_macaddr_get fails only for an invalid port or a null pointer (rte_ethdev.c); were
    // it to fail, l3 would send with a zero source MAC: start-up stops instead.
    if (int rc = rte_eth_macaddr_get(id, &ps.mac); rc != 0) {
      return absl::InternalError(
          absl::StrCat("port ", id, " (", ps.name, "): rte_eth_macaddr_get: ", rte_strerror(-rc)));
    }
  }
  return absl::OkStatus();
}

uint64_t Engine::Impl::DrainRingPorts() {
  // A vdev net_ring port (`--vdev=net_ringN`) creates one ring per queue pair, named
  // ETH_RXTX<q>_<port name>, used by its TX queue q and RX queue q alike (so a port that is
  // only transmitted into fills it). They are looked up by that name and emptied whether or not
  // an RX queue was set up. (rte_eth_from_rings ports use the application's rings: the
  // application empties those.) Bounded by the pool's size, in case someone else still feeds
  // a ring (an attached net_ring of another process).
  uint64_t n = 0;
  const uint64_t bound = mp != nullptr ? mp->populated_size : 0;
  void* objs[64];
  for (uint16_t id : port_ids) {
    const PortState& ps = ports[id];
    if (ps.driver != "net_ring") continue;
    for (unsigned q = 0; q < 16; ++q) {  // RTE_PMD_RING_MAX_{RX,TX}_RINGS
      rte_ring* r = rte_ring_lookup(absl::StrCat("ETH_RXTX", q, "_", ps.name).c_str());
      if (r == nullptr) continue;
      while (n < bound) {
        const unsigned k = rte_ring_dequeue_burst(r, objs, 64, nullptr);
        if (k == 0) break;
        rte_pktmbuf_free_bulk(reinterpret_cast<rte_mbuf**>(objs), k);
        n += k;
      }
    }
  }
  return n;
}

// Every port is stopped and closed even when another's call failed. DPDK 22.11
// (lib/ethdev/rte_ethdev.c): rte_eth_dev_stop fails with -ENODEV for a port that is gone (a
// device removed while skbnfd ran: hot-unplug, rte_dev_remove), -ENOTSUP without a dev_stop op,
// or the PMD's own error, and then the port stays started; rte_eth_dev_close refuses a started
// port (-EINVAL, "Cannot close started device") and returns the PMD's close error. Either may
// leave buffers in the PMD: the final audit that follows says whether it did.
std::vector<std::string> Engine::Impl::ClosePorts() {
  std::vector<std::string> errors;
  for (uint16_t id : port_ids) {
    ports[id].started.store(false);
    const std::string port = absl::StrCat("port ", id, " (", ports[id].name, ")");
    const uint64_t out0 = OtherOut();  // what stop and close free of the rings
    if (int rc = rte_eth_dev_stop(id); rc != 0) {
      errors.push_back(absl::StrCat(port, ": rte_eth_dev_stop: ", rte_strerror(-rc)));
    }
    if (int rc = rte_eth_dev_close(id); rc != 0) {
      errors.push_back(absl::StrCat(port, ": rte_eth_dev_close: ", rte_strerror(-rc)));
    }
    Book(id, out0);
  }
  return errors;
}

// net_virtio_user with a vhost-user backend shares the process's memory with the backend as at
// most VHOST_MEMORY_MAX_NREGIONS (8) file-backed regions, one per distinct file descriptor of
// EAL's memory segments (DPDK 22.11 drivers/net/virtio/virtio_user/vhost_user.c,
// update_memory_region / vhost_user_set_memory_table). Without --single-file-segments each
// hugepage is its own file: the backend never gets the memory table, virtio_user_start_device
// fails with "Too many memory regions", and virtio_user_set_status swallows the failure
// (virtio_user_ethdev.c): rte_eth_dev_start returns 0, the link reads up, and the port forwards
// nothing. So the engine counts the regions the same way before it starts such a port, and
// refuses, saying what to write. (--legacy-mem maps all hugepages as few files too.) A segment
// without a file (--no-huge) cannot be shared at all.
namespace {

struct RegionCount {
  std::set<int> fds;
  size_t segments_without_fd = 0;
};

int CountRegion(const rte_memseg_list*, const rte_memseg* ms, void* arg) {
  auto* c = static_cast<RegionCount*>(arg);
  const int fd = rte_memseg_get_fd_thread_unsafe(ms);  // rte_memseg_walk holds the lock
  if (fd < 0) {
    ++c->segments_without_fd;
  } else {
    c->fds.insert(fd);
  }
  return 0;
}

constexpr size_t kVhostUserMaxRegions = 8;  // VHOST_MEMORY_MAX_NREGIONS, vhost_user.c

}  // namespace

absl::Status Engine::Impl::CheckStartable(uint16_t id) const {
  const PortState& ps = ports[id];
  if (ps.driver != "net_virtio_user") return absl::OkStatus();
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(id, &info) != 0 || info.device == nullptr) return absl::OkStatus();
  const rte_devargs* da = rte_dev_devargs(info.device);
  const std::string args = da != nullptr && da->args != nullptr ? da->args : "";
  // A vhost-kernel (/dev/vhost-net) or vhost-vdpa backend has other limits; only vhost-user's
  // socket is checked here.
  if (args.find("path=/dev/vhost-") != std::string::npos) return absl::OkStatus();
  RegionCount c;
  rte_memseg_walk(CountRegion, &c);
  const std::string port = absl::StrCat("port ", id, " (", ps.name, ", vhost-user)");
  if (c.segments_without_fd > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        port, ": EAL's memory has ", c.segments_without_fd,
        " segment(s) without a file (--no-huge?), which vhost-user cannot share with its "
        "backend: run with hugepages and add --single-file-segments to the EAL arguments"));
  }
  if (c.fds.size() > kVhostUserMaxRegions) {
    return absl::FailedPreconditionError(absl::StrCat(
        port, ": EAL's memory is ", c.fds.size(),
        " files (one per hugepage) but vhost-user shares at most ", kVhostUserMaxRegions,
        " memory regions with its backend (DPDK: \"Too many memory regions\"; the device "
        "would not start yet report link up and forward nothing): add --single-file-segments "
        "to the EAL arguments (or --legacy-mem)"));
  }
  return absl::OkStatus();
}

std::vector<PortInfo> Engine::Ports() const {
  std::vector<PortInfo> out;
  for (uint16_t id : impl_->port_ids) {
    const PortState& ps = impl_->ports[id];
    PortInfo p;
    p.id = id;
    p.name = ps.name;
    p.driver = ps.driver;
    p.device = ps.device.empty() ? ps.name : ps.device;
    std::copy(ps.mac.addr_bytes, ps.mac.addr_bytes + 6, p.mac.begin());
    p.peer = ps.peer;
    p.socket_id = ps.socket_id;
    p.rx_queues = ps.nb_rxq;
    p.tx_queues = ps.nb_txq;
    p.rx_ring_size = ps.rx_ring;
    p.tx_ring_size = ps.tx_ring;
    p.tx_shared = ps.tx_shared;
    p.started = ps.started.load();
    if (!impl_->stopped) {
      rte_eth_link link{};
      if (rte_eth_link_get_nowait(id, &link) == 0) {
        p.has_link = true;
        p.link_up = link.link_status == RTE_ETH_LINK_UP;
        // net_af_xdp says "up" from start to stop whatever its interface does (af_xdp_link.cc).
        if (p.link_up && ps.xdp_if_index != 0) p.link_up = XdpInterfaceUp(ps.xdp_if_index);
        p.link_speed_mbps = link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed;
      }
      rte_eth_stats st{};
      if (rte_eth_stats_get(id, &st) == 0) {
        p.has_pmd_stats = true;
        p.pmd.ipackets = st.ipackets;
        p.pmd.opackets = st.opackets;
        p.pmd.ibytes = st.ibytes;
        p.pmd.obytes = st.obytes;
        p.pmd.imissed = st.imissed;
        p.pmd.ierrors = st.ierrors;
        p.pmd.oerrors = st.oerrors;
        p.pmd.rx_nombuf = st.rx_nombuf;
      }
      if (ps.started.load() && !ps.xsk_inodes.empty()) {
        const XskRingMbufs m = XdpRingMbufs(ps.xsk_inodes);
        p.has_ring_mbufs = m.known;
        p.ring_mbufs_source = "af_xdp_rings";
        p.rx_ring_mbufs = m.rx;
        p.tx_ring_mbufs = m.tx;
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace skbnf::dpdk
