// The packet path: a worker's poll loop and the forwarding modes (see engine.h for what each
// mode does). No lock, allocation or virtual call per packet; counters are per-core stores.
#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "dataplane/dpdk/engine_state.h"

namespace skbnf::dpdk {
namespace {

// ---------------------------------------------------------------------------------------------
// The packet path.

// `bytes`: the packets' total length, known by the caller. What TX does not take counts as a
// tx_full drop of the port the packets came in on.
inline void Send(Engine::Impl& e, Worker& w, uint16_t in_port, uint16_t port, rte_mbuf** pkts,
                 uint16_t n, uint64_t bytes) {
  if (n == 0) return;
  PortState& ps = e.ports[port];
  uint16_t sent;
  if (__builtin_expect(ps.tx_shared, 0)) {
    rte_spinlock_lock(&ps.tx_lock);
    sent = rte_eth_tx_burst(port, 0, pkts, n);
    rte_spinlock_unlock(&ps.tx_lock);
  } else {
    sent = rte_eth_tx_burst(port, static_cast<uint16_t>(w.index), pkts, n);
  }
  if (__builtin_expect(sent < n, 0)) {
    for (uint16_t i = sent; i < n; ++i) bytes -= pkts[i]->pkt_len;
    w.c.ports[in_port].drops[kDropTxFull].Add(n - sent);
    rte_pktmbuf_free_bulk(pkts + sent, n - sent);
  }
  w.c.ports[port].tx_pkts.Add(sent);
  w.c.ports[port].tx_bytes.Add(bytes);
}

void ForwardIo(Engine::Impl& e, Worker& w, uint16_t in_port, rte_mbuf** pkts, uint16_t n,
               uint64_t bytes) {
  const int peer = e.ports[in_port].peer;
  Send(e, w, in_port, static_cast<uint16_t>(peer), pkts, n, bytes);
}

void ForwardMac(Engine::Impl& e, Worker& w, uint16_t in_port, rte_mbuf** pkts, uint16_t n,
                uint64_t bytes) {
  const uint16_t peer = static_cast<uint16_t>(e.ports[in_port].peer);
  const PortState& out = e.ports[peer];
  for (uint16_t i = 0; i < n; ++i) {
    auto* eth = rte_pktmbuf_mtod(pkts[i], rte_ether_hdr*);
    rte_ether_addr_copy(&out.dst_mac, &eth->dst_addr);
    rte_ether_addr_copy(&out.mac, &eth->src_addr);
  }
  Send(e, w, in_port, peer, pkts, n, bytes);
}

// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), for the 16-bit word holding TTL and protocol.
inline void DecrementTtl(rte_ipv4_hdr* ip) {
  const uint16_t old_word = rte_be_to_cpu_16(*reinterpret_cast<const uint16_t*>(&ip->time_to_live));
  ip->time_to_live--;
  const uint16_t new_word = static_cast<uint16_t>(old_word - 0x100);
  uint32_t sum = static_cast<uint16_t>(~rte_be_to_cpu_16(ip->hdr_checksum));
  sum += static_cast<uint16_t>(~old_word);
  sum += new_word;
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  ip->hdr_checksum = rte_cpu_to_be_16(static_cast<uint16_t>(~sum));
}

// The IPv4 header checksum verifies (RFC 1071: the one's complement sum of the header is
// 0xffff). A 20-byte header (no options) is summed as five 32-bit words and folded, the same
// sum as rte_raw_cksum's 16-bit words in a quarter of the instructions.
inline bool Ipv4SumOk(const rte_ipv4_hdr* ip, uint32_t ihl_bytes) {
  if (ihl_bytes != sizeof(rte_ipv4_hdr)) return rte_raw_cksum(ip, ihl_bytes) == 0xffff;
  uint32_t w[5];
  memcpy(w, ip, sizeof(w));
  uint64_t s = uint64_t{w[0]} + w[1] + w[2] + w[3] + w[4];
  s = (s & 0xffffffff) + (s >> 32);
  s = (s & 0xffffffff) + (s >> 32);
  uint32_t t = static_cast<uint32_t>((s & 0xffff) + (s >> 16));
  t = (t & 0xffff) + (t >> 16);
  return t == 0xffff;
}

// Header checks of one packet: its IPv4 header, or a drop reason.
inline int CheckIpv4(rte_mbuf* m, rte_ipv4_hdr** out) {
  const auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  if (m->data_len < sizeof(rte_ether_hdr) ||
      eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
    return kDropNotIpv4;
  }
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(const_cast<rte_ether_hdr*>(eth) + 1);
  const uint32_t room = m->data_len - sizeof(rte_ether_hdr);
  const uint32_t ihl_bytes = (ip->version_ihl & 0xf) * 4u;
  if (room < sizeof(rte_ipv4_hdr) || (ip->version_ihl >> 4) != 4 || ihl_bytes < 20 ||
      ihl_bytes > room || rte_be_to_cpu_16(ip->total_length) < ihl_bytes ||
      rte_be_to_cpu_16(ip->total_length) > room || !Ipv4SumOk(ip, ihl_bytes)) {
    return kDropBadHeader;
  }
  if (ip->time_to_live <= 1) return kDropTtlExpired;
  *out = ip;
  return -1;
}

// Three passes per chunk of 64: header checks; the route lookups four at a time
// (rte_lpm_lookupx4: four independent table walks in flight, which is what a large table's
// cache misses need); then TTL, checksum, MAC rewrite and the per-port buckets, in packet order.
void ForwardL3(Engine::Impl& e, Worker& w, uint16_t in_port, rte_mbuf** pkts, uint16_t n,
               uint64_t bytes) {
  (void)bytes;
  constexpr uint32_t kMiss = UINT32_MAX;
  rte_mbuf* out[kMaxPorts][64];
  uint16_t cnt[kMaxPorts];
  uint64_t out_bytes[kMaxPorts];
  uint16_t touched[kMaxPorts];
  uint16_t ntouched = 0;
  rte_mbuf* drop[kMaxBurst];
  uint16_t ndrop = 0;
  uint64_t drops[kNumDropReasons] = {};
  rte_mbuf* cand[64];
  rte_ipv4_hdr* cand_ip[64];
  alignas(16) uint32_t dst[64 + 3];
  alignas(16) uint32_t ids[64 + 3];
  for (uint16_t off = 0; off < n; off += 64) {
    const uint16_t k = std::min<uint16_t>(64, static_cast<uint16_t>(n - off));
    uint16_t nc = 0;
    for (uint16_t i = 0; i < k; ++i) {
      rte_mbuf* m = pkts[off + i];
      rte_ipv4_hdr* ip = nullptr;
      const int reason = CheckIpv4(m, &ip);
      if (reason >= 0) {
        drops[reason]++;
        drop[ndrop++] = m;
        continue;
      }
      cand[nc] = m;
      cand_ip[nc] = ip;
      dst[nc] = rte_be_to_cpu_32(ip->dst_addr);
      // The tbl24 line (and its page walk) starts loading now; the lookups come after the
      // whole chunk's header checks. With 100k routes and random destinations each lookup is
      // otherwise a cache (and, on 4 KiB pages, a TLB) miss in series with the next.
      rte_prefetch0(&e.lpm->tbl24[dst[nc] >> 8]);
      ++nc;
    }
    for (uint16_t j = nc; j < ((nc + 3) & ~3); ++j) dst[j] = 0;
    for (uint16_t j = 0; j < nc; j += 4) {
      rte_lpm_lookupx4(e.lpm, _mm_load_si128(reinterpret_cast<const __m128i*>(dst + j)), ids + j,
                       kMiss);
    }
    for (uint16_t j = 0; j < nc; ++j) {
      rte_mbuf* m = cand[j];
      const uint32_t id = ids[j];
      const uint64_t hop = id != kMiss && id < kMaxNextHops
                               ? e.hops[id].load(std::memory_order_relaxed)
                               : e.default_hop.load(std::memory_order_relaxed);
      const uint16_t port = static_cast<uint16_t>(hop & 0xffff);
      if (hop == 0 || port >= kMaxPorts || !e.ports[port].active || e.ports[port].nb_txq == 0) {
        drops[kDropNoRoute]++;
        drop[ndrop++] = m;
        continue;
      }
      DecrementTtl(cand_ip[j]);
      auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
      const uint64_t hop_be = rte_cpu_to_be_64(hop);  // the MAC's 6 bytes first (PackHop)
      memcpy(eth->dst_addr.addr_bytes, &hop_be, RTE_ETHER_ADDR_LEN);
      rte_ether_addr_copy(&e.ports[port].mac, &eth->src_addr);
      bool seen = false;
      for (uint16_t t = 0; t < ntouched; ++t) seen |= touched[t] == port;
      if (!seen) {
        touched[ntouched++] = port;
        cnt[port] = 0;
        out_bytes[port] = 0;
      }
      out[port][cnt[port]++] = m;
      out_bytes[port] += m->pkt_len;
    }
    for (uint16_t t = 0; t < ntouched; ++t) {
      const uint16_t p = touched[t];
      Send(e, w, in_port, p, out[p], cnt[p], out_bytes[p]);
    }
    ntouched = 0;
  }
  if (ndrop > 0) {
    rte_pktmbuf_free_bulk(drop, ndrop);
    for (int r = 0; r < kNumDropReasons; ++r) {
      if (drops[r] != 0) w.c.ports[in_port].drops[r].Add(drops[r]);
    }
  }
}

using ForwardFn = void (*)(Engine::Impl&, Worker&, uint16_t, rte_mbuf**, uint16_t, uint64_t);

// Engine::SetTestStall: a worker that, at each newly published epoch, is late to its quiescent
// point by `test_stall_ms` (tests only; never set in production).
void TestStall(Worker& w, const pool::Pool* pool) {
  const uint32_t ms = w.test_stall_ms.load(std::memory_order_relaxed);
  if (ms == 0 || pool == nullptr) return;
  const uint64_t epoch = pool->epoch();
  if (epoch == w.test_seen_epoch) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  w.test_seen_epoch = pool->epoch();
}

}  // namespace

int WorkerMain(void* arg) {
  Worker& w = *static_cast<Worker*>(arg);
  Engine::Impl& e = *w.engine;
  pool::Pool* const pool = e.pool;
  const int core = static_cast<int>(w.lcore);
  const uint16_t burst = e.config.burst;
  const ForwardFn forward = e.config.mode == Mode::kIo    ? &ForwardIo
                            : e.config.mode == Mode::kMac ? &ForwardMac
                                                          : &ForwardL3;
  rte_rcu_qsbr* const rcu = e.rcu;
  if (rcu != nullptr) rte_rcu_qsbr_thread_online(rcu, w.index);
  rte_mbuf* pkts[kMaxBurst];
  if (pool != nullptr) w.test_seen_epoch = pool->epoch();
  while (!e.stop.load(std::memory_order_relaxed)) {
    if (rcu != nullptr) rte_rcu_qsbr_quiescent(rcu, w.index);
    if (__builtin_expect(w.test_stall_ms.load(std::memory_order_relaxed) != 0, 0)) {
      TestStall(w, pool);
    }
    // Quiescent point: strategy swaps and pauses take effect here.
    const bool run =
        pool != nullptr ? pool->Quiesce(core) : !w.pause_requested.load(std::memory_order_acquire);
    if (__builtin_expect(!run, 0)) {
      if (!w.parked.load(std::memory_order_relaxed))
        w.parked.store(true, std::memory_order_release);
      rte_pause();
      continue;
    }
    if (__builtin_expect(w.parked.load(std::memory_order_relaxed), 0)) {
      w.parked.store(false, std::memory_order_release);
    }
    bool busy = false;
    for (const RxQueue& q : w.rx) {
      if (pool != nullptr) pool->SetRxPort(core, q.port);
      const uint16_t n = rte_eth_rx_burst(q.port, q.queue, pkts, burst);
      if (n == 0) continue;
      busy = true;
      uint64_t bytes = 0;
      for (uint16_t i = 0; i < n; ++i) bytes += pkts[i]->pkt_len;
      w.c.ports[q.port].rx_pkts.Add(n);
      w.c.ports[q.port].rx_bytes.Add(bytes);
      forward(e, w, q.port, pkts, n, bytes);
    }
    w.c.polls.Add(1);
    if (busy) w.c.busy_polls.Add(1);
  }
  if (rcu != nullptr) rte_rcu_qsbr_thread_offline(rcu, w.index);
  return 0;
}

}  // namespace skbnf::dpdk
