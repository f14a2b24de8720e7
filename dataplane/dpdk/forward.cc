// The packet path: a worker's poll loop and the forwarding modes (see engine.h for what each
// mode does). No lock, allocation or virtual call per packet; counters are per-core stores.
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "dataplane/dpdk/engine_state.h"
#include "dataplane/dpdk/l3_packet.h"
#include "dataplane/dpdk/skbnf_mempool.h"

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

// Three passes per chunk of 64: header checks (L3Check, l3_packet.h); the route lookups four at
// a time (rte_lpm_lookupx4: four independent table walks in flight, which is what a large
// table's cache misses need); then TTL, checksum, MAC rewrite (L3Rewrite) and the per-port
// buckets, in packet order.
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
  alignas(16) uint32_t dst[64 + 3];
  alignas(16) uint32_t ids[64 + 3];
  for (uint16_t off = 0; off < n; off += 64) {
    const uint16_t k = std::min<uint16_t>(64, static_cast<uint16_t>(n - off));
    uint16_t nc = 0;
    for (uint16_t i = 0; i < k; ++i) {
      rte_mbuf* m = pkts[off + i];
      uint8_t* const frame = rte_pktmbuf_mtod(m, uint8_t*);
      const int reason = L3Check(frame, m->data_len);
      if (reason >= 0) {
        drops[reason]++;
        drop[ndrop++] = m;
        continue;
      }
      cand[nc] = m;
      dst[nc] = L3Destination(frame);
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
      L3Rewrite(rte_pktmbuf_mtod(m, uint8_t*), hop, e.ports[port].mac);
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

// The lcore cache's regions (skbnf_mempool.h, "DPDK's lcore cache plays the lcache layer"):
// at each mark, the balance since the previous one of what the cache handed out or took back:
// len0 - len1 + taken from below - given below. One PMD call (or one forward) per region.
class CacheRegions {
 public:
  explicit CacheRegions(const HostLcache& h) : len_(h.len), t_(h.tally) {}
  void Begin() {
    len0_ = *len_;
    a0_ = t_->below_gets;
    f0_ = t_->below_puts;
    gm0_ = t_->get_misses;
    pb0_ = t_->put_bypass;
    gets_ = puts_ = 0;
  }
  void Mark() {
    const uint32_t len = *len_;
    const uint64_t a = t_->below_gets;
    const uint64_t f = t_->below_puts;
    const int64_t net = static_cast<int64_t>(len0_) - static_cast<int64_t>(len) +
                        static_cast<int64_t>(a - a0_) - static_cast<int64_t>(f - f0_);
    if (net >= 0) {
      gets_ += static_cast<uint64_t>(net);
    } else {
      puts_ += static_cast<uint64_t>(-net);
    }
    len0_ = len;
    a0_ = a;
    f0_ = f;
  }
  void Count(pool::Pool* pool, int core) {
    pool->CountHostLcache(core, gets_, puts_, t_->get_misses - gm0_, t_->put_bypass - pb0_);
    t_->gauge.store(len0_, std::memory_order_relaxed);
  }

 private:
  const volatile uint32_t* len_;
  HostLcacheTally* t_;
  uint32_t len0_ = 0;
  uint64_t a0_ = 0, f0_ = 0, gm0_ = 0, pb0_ = 0, gets_ = 0, puts_ = 0;
};

// One pass over the worker's RX queues; returns the packets received. kHosted: the lcore
// cache plays the lcache layer on this core (its regions are counted).
template <bool kHosted>
inline uint64_t PollQueues(Engine::Impl& e, Worker& w, pool::Pool* pool, int core,
                           ForwardFn forward, rte_mbuf** pkts, uint16_t burst,
                           CacheRegions& regions) {
  uint64_t received = 0;
  if (kHosted) regions.Begin();
  for (const RxQueue& q : w.rx) {
    if (pool != nullptr) pool->SetRxPort(core, q.port);
    const uint16_t n = rte_eth_rx_burst(q.port, q.queue, pkts, burst);
    if (kHosted) regions.Mark();
    if (n == 0) continue;
    received += n;
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < n; ++i) bytes += pkts[i]->pkt_len;
    w.c.ports[q.port].rx_pkts.Add(n);
    w.c.ports[q.port].rx_bytes.Add(bytes);
    forward(e, w, q.port, pkts, n, bytes);
    if (kHosted) regions.Mark();
  }
  if (kHosted) regions.Count(pool, core);
  return received;
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
  const HostLcache host = HostLcacheOf(e.mp, core);
  CacheRegions regions(host);
  // Busy cycles (see WorkerCounters): TSC at the end of the previous busy poll, which is where
  // the next one's accounting starts; 0 after an idle poll or a pause (then one rdtsc before
  // the RX bursts). One rdtsc per iteration, busy or idle.
  uint64_t busy_from = 0;
  if (pool != nullptr) w.test_seen_epoch = pool->epoch();
  while (!e.stop.load(std::memory_order_relaxed)) {
    if (rcu != nullptr) rte_rcu_qsbr_quiescent(rcu, w.index);
    if (__builtin_expect(w.test_stall_ms.load(std::memory_order_relaxed) != 0, 0)) {
      TestStall(w, pool);
      busy_from = 0;
    }
    // Quiescent point: strategy swaps and pauses take effect here.
    const bool run =
        pool != nullptr ? pool->Quiesce(core) : !w.pause_requested.load(std::memory_order_acquire);
    if (__builtin_expect(!run, 0)) {
      if (!w.parked.load(std::memory_order_relaxed))
        w.parked.store(true, std::memory_order_release);
      busy_from = 0;
      rte_pause();
      continue;
    }
    if (__builtin_expect(w.parked.load(std::memory_order_relaxed), 0)) {
      w.parked.store(false, std::memory_order_release);
    }
    const uint64_t poll_start = busy_from != 0 ? busy_from : rte_rdtsc();
    // Whether the lcore cache plays the lcache layer changes only at the quiescent point.
    const uint64_t received =
        host.tally != nullptr && host.tally->active.load(std::memory_order_relaxed) != 0
            ? PollQueues<true>(e, w, pool, core, forward, pkts, burst, regions)
            : PollQueues<false>(e, w, pool, core, forward, pkts, burst, regions);
    w.c.polls.Add(1);
    busy_from = 0;
    if (received != 0) {
      busy_from = rte_rdtsc();
      w.c.busy_polls.Add(1);
      w.c.busy_cycles.Add(busy_from - poll_start);
      w.c.busy_packets.Add(received);
    }
  }
  if (rcu != nullptr) rte_rcu_qsbr_thread_offline(rcu, w.index);
  return 0;
}

}  // namespace skbnf::dpdk
