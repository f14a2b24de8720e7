// SPDX-License-Identifier: BSD-3-Clause
// The packet path: a worker's poll loop and the forwarding modes (see engine.h for what each
// mode does). No lock, allocation or virtual call per packet; counters are per-core stores.
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <cerrno>

#include "dataplane/dpdk/engine_state.h"
#include "dataplane/dpdk/l3_packet.h"
#include "dataplane/dpdk/loop_perf.h"
#include "dataplane/dpdk/skbnf_mempool.h"

namespace skbnf::dpdk {
namespace {

// ---------------------------------------------------------------------------------------------
// The packet path.

// The packets' total length, for the per-core byte counters: per packet a pointer load and
// an add from memory. Sixteen lengths are summed in 32 bits before the 64-bit total (no
// overflow while a packet's pkt_len stays below 256 MiB; DPDK's largest, a TSO or LRO chain,
// is far below), which lets the compiler add straight from each mbuf (the plain loop
// zero-extends every length: 6 instructions per packet; four at a time, 3; eight, 2.5;
// sixteen, 2.25; the floor is 2).
inline uint32_t SumSixteen(rte_mbuf* const* p) {
  uint32_t sixteen = 0;
#pragma GCC unroll 16
  for (int k = 0; k < 16; ++k) sixteen += p[k]->pkt_len;
  return sixteen;
}
inline uint64_t SumLengths(rte_mbuf* const* pkts, uint16_t n) {
  if (__builtin_expect(n == 32, 1)) {  // a full burst: straight-line, no loop control
    return uint64_t{SumSixteen(pkts)} + SumSixteen(pkts + 16);
  }
  uint64_t bytes = 0;
  rte_mbuf* const* p = pkts;
  rte_mbuf* const* const end16 = pkts + (n & ~15u);
  for (; p != end16; p += 16) bytes += SumSixteen(p);
  for (rte_mbuf* const* const end = pkts + n; p != end; ++p) bytes += (*p)->pkt_len;
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// Where every buffer is (issue 32 item 1; Engine::Places, audit.cc, adds it up).
//
// Every object out of the pool was taken by some call on some thread, so the worker brackets
// each PMD call with what the pool has handed out on its core (HandedOut: allocs - frees so
// far) and books the difference to the queue the call was on: an RX burst's balance is what the
// PMD took to refill port p's RX ring (WorkerCounters::Port::rx_refilled), a TX burst's or TX
// reclaim's is what it freed of what it had sent on p (tx_freed). The control thread does the
// same around each port's set-up, start, stop and close (PortState::setup_out). Then, from
// counters only, for every PMD:
//   RX ring of p   setup_out(p) + sum over cores of rx_refilled(c, p) - rx_packets(c, p)
//   TX ring of p   sum over cores of tx_packets(c, p) - tx_freed(c, p)
//   core c's hands handed_out(c) - sum over p of (rx_refilled - tx_freed - rx_packets
//                  + tx_packets)(c, p): received and not yet sent or freed (0 when parked)
//   other threads  handed_out(other slot) - sum over p of setup_out(p): non-worker threads
//                  (an application's lcore; a PMD's own thread refilling a ring, e.g. after a
//                  vhost-user reconnection, counts here)
// Their sum is every object the host holds; the pool's gauges (populated - store - layers -
// depots) count the same objects the other way, so the difference is `unaccounted`: 0 whenever
// the pool's bookkeeping holds (the audit checks it with the workers parked). Assumed (true
// of DPDK 22.11's PMDs on their normal paths): a PMD call allocates and frees only for the
// queue it was called on; a PMD that freed received packets inside an RX burst would show them
// as the ring's and not the worker's (the sum stays exact). With DPDK's lcore cache playing
// the lcache layer the balance is read from the cache (its length and what it moved below,
// skbnf_mempool.h) instead of the pool's counters, which the cache's hits reach only at the
// end of the poll. Cost: two readings (Pool::BracketOut: five loads) per RX burst and per TX
// burst, not per packet.
inline uint64_t HandedOut(const Worker& w) {
  if (w.out_hosted) return *w.out_cache_below - *w.out_cache_len;
  return w.out_slot != nullptr ? pool::Pool::BracketOut(*w.out_slot) : 0;
}

// One TX burst on `port` (the worker's queue, or queue 0 under the port's lock when shared).
inline uint16_t TxBurst(Engine::Impl& e, Worker& w, uint16_t port, rte_mbuf** pkts, uint16_t n) {
  PortState& ps = e.ports[port];
  const uint64_t out0 = HandedOut(w);
  uint16_t sent;
  if (__builtin_expect(ps.tx_shared, 0)) {
    rte_spinlock_lock(&ps.tx_lock);
    sent = rte_eth_tx_burst(port, 0, pkts, n);
    rte_spinlock_unlock(&ps.tx_lock);
  } else {
    sent = rte_eth_tx_burst(port, static_cast<uint16_t>(w.index), pkts, n);
  }
  w.c.ports[port].tx_freed.Add(out0 - HandedOut(w));
  return sent;
}

// What TX did not take counts as a tx_full drop of the port the packets came in on.
inline void CountSent(Worker& w, uint16_t in_port, uint16_t port, rte_mbuf** pkts, uint16_t n,
                      uint16_t sent, uint64_t bytes) {
  if (__builtin_expect(sent < n, 0)) {
    bytes -= SumLengths(pkts + sent, static_cast<uint16_t>(n - sent));
    w.c.ports[in_port].drops[kDropTxFull].Add(n - sent);
    rte_pktmbuf_free_bulk(pkts + sent, n - sent);
  }
  w.c.ports[port].tx_packets.Add(sent);
  w.c.ports[port].tx_bytes.Add(bytes);
}

// Send of a latency sample's packets (LoopPerf, loop_perf.h): their RX stamps read before the
// TX burst, each sent one recorded in its RX port's histogram.
__attribute__((noinline)) void SendSampled(Engine::Impl& e, Worker& w, uint16_t in_port,
                                           uint16_t port, rte_mbuf** pkts, uint16_t n,
                                           uint64_t bytes) {
  LatencyRecord rec;
  rec.Read(pkts, n, e.rx_tsc_offset);
  const uint16_t sent = TxBurst(e, w, port, pkts, n);
  rec.Commit(w.perf->port[in_port], sent);
  CountSent(w, in_port, port, pkts, n, sent, bytes);
}

// `bytes`: the packets' total length, known by the caller.
inline void Send(Engine::Impl& e, Worker& w, uint16_t in_port, uint16_t port, rte_mbuf** pkts,
                 uint16_t n, uint64_t bytes) {
  if (n == 0) return;
  if (__builtin_expect(w.latency_burst, 0)) return SendSampled(e, w, in_port, port, pkts, n, bytes);
  const uint16_t sent = TxBurst(e, w, port, pkts, n);
  CountSent(w, in_port, port, pkts, n, sent, bytes);
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

// l3 forwarding out of more than one port (ForwardL3's chunk, when its packets go to more than
// one port): a counting sort by port, stable (each port's packets keep their order), then one
// Send per port. The ports come from the candidates' next hops again (the one-port common case
// stores none); no-route candidates (already counted and dropped) are skipped.
__attribute__((noinline)) void SendByPort(Engine::Impl& e, Worker& w, uint16_t in_port,
                                          rte_mbuf* const* cand, const uint32_t* ids, uint16_t nc,
                                          const L3Hop* hops) {
  uint16_t cnt[kMaxPorts] = {};
  uint16_t start[kMaxPorts];
  uint64_t out_bytes[kMaxPorts] = {};
  uint8_t port_of[kMaxBurst];
  rte_mbuf* out[kMaxBurst];
  for (uint16_t j = 0; j < nc; ++j) {
    const uint16_t p = hops[ids[j] & (kMaxNextHops - 1)].port;
    port_of[j] = static_cast<uint8_t>(p < kMaxPorts ? p : kMaxPorts);
    if (p < kMaxPorts) cnt[p]++;
  }
  uint16_t at = 0;
  for (int p = 0; p < kMaxPorts; ++p) {
    start[p] = at;
    at = static_cast<uint16_t>(at + cnt[p]);
    cnt[p] = start[p];  // from here: the next free slot of p's run
  }
  for (uint16_t j = 0; j < nc; ++j) {
    const uint8_t p = port_of[j];
    if (p == kMaxPorts) continue;
    out[cnt[p]++] = cand[j];
    out_bytes[p] += cand[j]->pkt_len;
  }
  for (int p = 0; p < kMaxPorts; ++p) {
    if (cnt[p] == start[p]) continue;
    Send(e, w, in_port, static_cast<uint16_t>(p), out + start[p],
         static_cast<uint16_t>(cnt[p] - start[p]), out_bytes[p]);
  }
}

// Three passes per chunk of 64: header checks (L3Check, l3_packet.h), each accepted packet's
// tbl24 line prefetched; the route lookups four at a time (rte_lpm_lookupx4: four independent
// table walks in flight, which is what a large table's cache misses need; a miss returns the
// default route's next-hop id); then the rewrite (L3Rewrite with the next hop's precomputed
// L3Hop) in packet order. The forwarded packets go into one array; when they all go to one port
// (the OR and the AND of their ports agree), that array is the TX burst and its bytes are the
// chunk's minus the dropped ones, so the common case pays no per-port bookkeeping; otherwise
// SendByPort sorts the chunk by port.
void ForwardL3(Engine::Impl& e, Worker& w, uint16_t in_port, rte_mbuf** pkts, uint16_t n,
               uint64_t bytes) {
  constexpr uint16_t kChunk = 64;
  static_assert(kMaxPorts < 255, "SendByPort's uint8_t ports");
  static_assert((kMaxNextHops & (kMaxNextHops - 1)) == 0, "next-hop id mask");
  rte_lpm* const lpm = e.lpm;
  const L3Hop* const hops = e.hops.get();
  // Default route: read once per burst (a route change takes effect at the next burst).
  const uint32_t default_id = e.default_hop.load(std::memory_order_acquire);
  rte_mbuf* drop[kMaxBurst];
  uint16_t ndrop = 0;
  uint64_t drops[kNumDropReasons] = {};
  rte_mbuf* cand[kChunk];
  uint8_t* frames[kChunk];
  rte_mbuf* fwd[kChunk];
  alignas(16) uint32_t dst[kChunk + 3];
  alignas(16) uint32_t ids[kChunk + 3];
  for (uint16_t off = 0; off < n; off += kChunk) {
    const uint16_t k = std::min<uint16_t>(kChunk, static_cast<uint16_t>(n - off));
    uint64_t fwd_bytes = n <= kChunk ? bytes : SumLengths(pkts + off, k);
    uint16_t nc = 0;
    for (uint16_t i = 0; i < k; ++i) {
      rte_mbuf* m = pkts[off + i];
      uint8_t* const frame = rte_pktmbuf_mtod(m, uint8_t*);
      const int reason = L3Check(frame, m->data_len);
      if (__builtin_expect(reason != kL3Route, 0)) {
        drops[reason]++;
        drop[ndrop++] = m;
        fwd_bytes -= m->pkt_len;
        continue;
      }
      cand[nc] = m;
      frames[nc] = frame;
      dst[nc] = L3Destination(frame);
      // The tbl24 line (and its page walk) starts loading now; the lookups come after the
      // whole chunk's header checks. With 100k routes and random destinations each lookup is
      // otherwise a cache (and, on 4 KiB pages, a TLB) miss in series with the next.
      rte_prefetch0(&lpm->tbl24[dst[nc] >> 8]);
      ++nc;
    }
    for (uint16_t j = nc; j < ((nc + 3) & ~3); ++j) dst[j] = 0;
    for (uint16_t j = 0; j < nc; j += 4) {
      rte_lpm_lookupx4(lpm, _mm_load_si128(reinterpret_cast<const __m128i*>(dst + j)), ids + j,
                       default_id);
    }
    uint16_t nf = 0;
    uint32_t port_or = 0, port_and = kL3NoPort;  // all one port: port_or == port_and
    for (uint16_t j = 0; j < nc; ++j) {
      // Every id in the LPM and the default one is below kMaxNextHops; the mask keeps even a
      // corrupt one inside the table.
      const L3Hop& h = hops[ids[j] & (kMaxNextHops - 1)];
      const uint32_t port = h.port;
      if (__builtin_expect(port >= kMaxPorts, 0)) {  // kL3NoPort: no route
        drops[kDropNoRoute]++;
        drop[ndrop++] = cand[j];
        fwd_bytes -= cand[j]->pkt_len;
        continue;
      }
      L3Rewrite(frames[j], h);
      fwd[nf++] = cand[j];
      port_or |= port;
      port_and &= port;
    }
    if (nf == 0) continue;
    if (__builtin_expect(port_or == port_and, 1)) {
      Send(e, w, in_port, static_cast<uint16_t>(port_or), fwd, nf, fwd_bytes);
    } else {
      SendByPort(e, w, in_port, cand, ids, nc, hops);
    }
  }
  if (ndrop > 0) {
    rte_pktmbuf_free_bulk(drop, ndrop);
    for (int r = 0; r < kNumDropReasons; ++r) {
      if (drops[r] != 0) w.c.ports[in_port].drops[r].Add(drops[r]);
    }
  }
}

using ForwardFn = void (*)(Engine::Impl&, Worker&, uint16_t, rte_mbuf**, uint16_t, uint64_t);

// The lcore cache's regions (skbnf_mempool.h, "DPDK's lcore cache plays the lcache layer"):
// at each mark, the balance since the previous one of what the cache handed out or took back:
// len0 - len1 + taken from below - given below. One PMD call (or one forward) per region.
class CacheRegions {
 public:
  explicit CacheRegions(const HostLcache& h) : len_(h.len), t_(h.tally) {}
  void Begin() {
    len0_ = *len_;
    b0_ = t_->below_net;
    gm0_ = t_->get_misses;
    pb0_ = t_->put_bypass;
    gets_ = puts_ = 0;
  }
  void Mark() {
    const uint32_t len = *len_;
    const uint64_t b = t_->below_net;
    const int64_t net =
        static_cast<int64_t>(len0_) - static_cast<int64_t>(len) + static_cast<int64_t>(b - b0_);
    if (net >= 0) {
      gets_ += static_cast<uint64_t>(net);
    } else {
      puts_ += static_cast<uint64_t>(-net);
    }
    len0_ = len;
    b0_ = b;
  }
  void Count(pool::Pool* pool, int core) {
    pool->CountHostLcache(core, gets_, puts_, t_->get_misses - gm0_, t_->put_bypass - pb0_);
    t_->gauge.store(len0_, std::memory_order_relaxed);
  }

 private:
  const volatile uint32_t* len_;
  HostLcacheTally* t_;
  uint32_t len0_ = 0;
  uint64_t b0_ = 0, gm0_ = 0, pb0_ = 0, gets_ = 0, puts_ = 0;
};

// One pass over one of the worker's RX queue lists; returns the packets received. kHosted: the
// lcore cache plays the lcache layer on this core (its regions are counted). kNative: the native
// twin queues (EngineConfig::native_twin), refilled from DPDK's pool: nothing of the skbnf
// pool's to attribute (Places), and none of its bookkeeping charged to the native side.
template <bool kHosted, ForwardFn forward, bool kNative>
inline uint64_t PollList(Engine::Impl& e, Worker& w, const std::vector<RxQueue>& list,
                         pool::Pool* pool, int core, rte_mbuf** pkts, uint16_t burst,
                         CacheRegions& regions, LoopPerf& perf) {
  uint64_t received = 0;
  if (kHosted) regions.Begin();
  for (const RxQueue& q : list) {
    // (Copied: the counters' stores below may alias the worker's queue list for the compiler,
    // which would then reload the port after each of them.)
    const uint16_t port = q.port;
    WorkerCounters::Port& pc = w.c.ports[port];
    uint16_t n;
    if constexpr (!kNative) {
      if (pool != nullptr) pool->SetRxPort(core, port);
      const uint64_t out0 = HandedOut(w);
      n = rte_eth_rx_burst(port, q.queue, pkts, burst);
      pc.rx_refilled.Add(HandedOut(w) - out0);
    } else {
      n = rte_eth_rx_burst(port, q.queue, pkts, burst);
    }
    if (kHosted) regions.Mark();
    if (n == 0) continue;
    received += n;
    const uint64_t bytes = SumLengths(pkts, n);
    pc.rx_packets.Add(n);
    pc.rx_bytes.Add(bytes);
    const bool sampled = perf.BeginBurst(pkts, n);
    forward(e, w, port, pkts, n, bytes);
    if (__builtin_expect(sampled, 0)) perf.EndBurst();
    if (kHosted) regions.Mark();
  }
  if (kHosted) regions.Count(pool, core);
  return received;
}

// One pass over the worker's RX queues: its own (w.rx), or their native twins (w.twin_rx) while
// the engine polls that side. Without twins: one load and a not-taken branch a pass.
template <bool kHosted, ForwardFn forward>
inline uint64_t PollQueues(Engine::Impl& e, Worker& w, pool::Pool* pool, int core, rte_mbuf** pkts,
                           uint16_t burst, CacheRegions& regions, LoopPerf& perf) {
  if (__builtin_expect(e.twin_mp != nullptr, 0) &&
      e.twin_in_use.load(std::memory_order_relaxed)) {
    return PollList<kHosted, forward, true>(e, w, w.twin_rx, pool, core, pkts, burst, regions,
                                            perf);
  }
  return PollList<kHosted, forward, false>(e, w, w.rx, pool, core, pkts, burst, regions, perf);
}

// ---------------------------------------------------------------------------------------------
// Idle polls give back what the TX queues hold (issue 34 item 4, too little memory).
//
// Some PMDs keep the mbufs they sent until a later TX call on the same queue frees them. With a
// small pool the last free mbufs can all sit there; if RX then cannot refill, no packet arrives,
// nothing is sent, and nothing frees them: a deadlock (tests/integration/small_pool_test.sh). So
// a worker whose poll received nothing reclaims its TX queues, at most kReclaimsPerSecond times
// a second. Never on a busy poll, so the packet path pays nothing for it; under load with a dry
// pool RX returns 0, and that poll counts as idle. Per queue, from the DPDK 22.11 sources:
//   net_af_xdp  a zero-length rte_eth_tx_burst: af_xdp_tx_zc reaches `out:` and kick_tx, whose
//               pull_umem_cq frees what the completion ring holds (up to 2,048), and whose
//               send() lets the kernel complete what the TX ring still holds. Its own TX frees
//               sent mbufs only at a later burst (kick_tx, or the completion ring half full);
//               it has no tx_done_cleanup. And af_xdp_rx_zc needs a whole burst of fresh mbufs
//               (rte_pktmbuf_alloc_bulk of what it peeked) before it hands over any.
//   others      rte_eth_tx_done_cleanup(port, queue, 0) where the PMD implements it (i40e, ice,
//               ice_dcf, ixgbe, igb, ena, hns3, txgbe, ngbe, netvsc, cnxk; not iavf, not mlx5;
//               net_vhost's is a no-op: it copies). -ENOTSUP (virtio, virtio_user, memif,
//               af_packet, null, ring, pcap) turns the queue's reclaim off. A zero-length burst
//               would not help virtio: virtio_xmit_pkts{,_packed,_inorder} return before their
//               cleanup when nb_pkts < 1, so its used descriptors are freed only inside a
//               non-empty burst. memif (copy mode), af_packet and net_vhost copy and free at TX.
constexpr uint64_t kReclaimsPerSecond = 10000;  // every 100 us at most

class TxReclaim {
 public:
  // The TX queues `w` sends on: its RX ports' peers (io, mac) or every port (l3), queue
  // w.index, or queue 0 under the port's lock when shared.
  TxReclaim(Engine::Impl& e, const Worker& w) : e_(e) {
    bool sends_to[kMaxPorts] = {};
    for (const RxQueue& q : w.rx) {
      const int peer = e.ports[q.port].peer;
      if (peer >= 0 && peer < kMaxPorts) sends_to[peer] = true;
    }
    for (uint16_t id : e.port_ids) {
      const PortState& ps = e.ports[id];
      if (ps.nb_txq == 0 || (e.config.mode != ForwardingMode::kL3 && !sends_to[id])) continue;
      Queue& q = queues_[n_++];
      q.port = id;
      q.queue = ps.tx_shared ? 0 : static_cast<uint16_t>(w.index);
      q.how = ps.driver == "net_af_xdp" ? kEmptyBurst : kDoneCleanup;
    }
    every_ = rte_get_tsc_hz() / kReclaimsPerSecond;
  }
  // An idle poll that started at TSC `now`: whether to reclaim now (then call Reclaim).
  bool Due(uint64_t now) {
    if (now - last_ < every_) return false;
    last_ = now;
    return true;
  }
  // What the PMDs free here goes through the worker's pool handle like any PMD call's frees:
  // with the lcore cache hosting the lcache layer, the caller counts it as one more region.
  // Whether a queue was asked (a slow iteration's tx_reclaim cause).
  __attribute__((noinline, cold)) bool Reclaim(Worker& w) {
    bool asked = false;
    for (int i = 0; i < n_; ++i) {
      Queue& q = queues_[i];
      PortState& ps = e_.ports[q.port];
      if (q.how == kOff || !ps.started.load(std::memory_order_relaxed)) continue;
      asked = true;
      const uint64_t out0 = HandedOut(w);
      if (ps.tx_shared) rte_spinlock_lock(&ps.tx_lock);
      if (q.how == kEmptyBurst) {
        rte_eth_tx_burst(q.port, q.queue, none_, 0);
      } else if (rte_eth_tx_done_cleanup(q.port, q.queue, 0) == -ENOTSUP) {
        q.how = kOff;
      }
      if (ps.tx_shared) rte_spinlock_unlock(&ps.tx_lock);
      w.c.ports[q.port].tx_freed.Add(out0 - HandedOut(w));
    }
    return asked;
  }

 private:
  enum How : uint8_t { kOff, kEmptyBurst, kDoneCleanup };
  struct Queue {
    uint16_t port, queue;
    How how;
  };
  Engine::Impl& e_;
  Queue queues_[kMaxPorts];
  int n_ = 0;
  uint64_t every_ = 0, last_ = 0;
  rte_mbuf* none_[1] = {};
};

// The poll loop, one per mode: the mode's forward function is inlined (no call per burst).
// kHooked: the loop of a test that set worker hooks (worker_hooks.h); the production loop
// (false) has no hook call, and nothing of the hooks is compiled into it.
template <ForwardFn forward, bool kHooked>
int RunWorker(Worker& w) {
  Engine::Impl& e = *w.engine;
  pool::Pool* const pool = e.pool;
  const int core = static_cast<int>(w.lcore);
  const uint16_t burst = e.config.burst;
  rte_rcu_qsbr* const rcu = e.rcu;
  w.tid.store(rte_gettid(), std::memory_order_relaxed);  // for Stop's report of a stuck worker
  if (rcu != nullptr) rte_rcu_qsbr_thread_online(rcu, w.index);
  rte_mbuf* pkts[kMaxBurst];
  const HostLcache host = HostLcacheOf(e.mp, core);
  CacheRegions regions(host);
  w.out_slot = pool != nullptr ? &pool->SlotOf(core) : nullptr;
  w.out_cache_len = host.len;
  w.out_cache_below = host.tally != nullptr ? &host.tally->below_net : nullptr;
  TxReclaim reclaim(e, w);
  LoopPerf perf(e, w);
  [[maybe_unused]] const WorkerView view{w.lcore, w.index, e.mp, pool};
  // Busy cycles (see WorkerCounters): TSC at the end of the previous busy poll, which is where
  // the next one's accounting starts; 0 after an idle poll or a pause (then one rdtsc before
  // the RX bursts). One rdtsc per iteration, busy or idle.
  uint64_t busy_from = 0;
  while (!e.stop.load(std::memory_order_relaxed)) {
    if (rcu != nullptr) rte_rcu_qsbr_quiescent(rcu, w.index);
    if constexpr (kHooked) {
      if (e.worker_hooks->BeforeQuiescent(view)) {
        busy_from = 0;
        perf.Hook();
      }
    }
    // Quiescent point: strategy swaps and pauses take effect here.
    const bool run =
        pool != nullptr ? pool->Quiesce(core) : !w.pause_requested.load(std::memory_order_acquire);
    if (__builtin_expect(!run, 0)) {
      if (!w.parked.load(std::memory_order_relaxed))
        w.parked.store(true, std::memory_order_release);
      w.c.parked_loops.Add(1);
      perf.Parked(w.audit_park.load(std::memory_order_relaxed));
      busy_from = 0;
      rte_pause();
      continue;
    }
    if (__builtin_expect(w.parked.load(std::memory_order_relaxed), 0)) {
      w.parked.store(false, std::memory_order_release);
    }
    perf.AfterQuiesce();
    if constexpr (kHooked) {
      if (e.worker_hooks->BeforePoll(view)) {
        busy_from = 0;
        perf.Hook();
      }
    }
    // An iteration runs from one TSC boundary to the next (LoopPerf): the end of a busy poll,
    // or a fresh read here after an idle poll or a pause (which closes the open iteration).
    uint64_t poll_start = busy_from;
    if (busy_from == 0) {
      poll_start = rte_rdtsc();
      perf.Close(poll_start, 0);
    }
    perf.MaybeReload();
    // Whether the lcore cache plays the lcache layer changes only at the quiescent point.
    const bool hosted =
        host.tally != nullptr && host.tally->active.load(std::memory_order_relaxed) != 0;
    w.out_hosted = hosted;
    const uint64_t received =
        hosted ? PollQueues<true, forward>(e, w, pool, core, pkts, burst, regions, perf)
               : PollQueues<false, forward>(e, w, pool, core, pkts, burst, regions, perf);
    w.c.polls.Add(1);
    busy_from = 0;
    if (received != 0) {
      busy_from = rte_rdtsc();
      w.c.busy_polls.Add(1);
      w.c.busy_cycles.Add(busy_from - poll_start);
      w.c.busy_packets.Add(received);
      perf.Close(busy_from, received);
    } else if (reclaim.Due(poll_start)) {
      if (hosted) regions.Begin();
      if (reclaim.Reclaim(w)) perf.TxReclaim();
      if (hosted) {
        regions.Mark();
        regions.Count(pool, core);
      }
    }
  }
  if (rcu != nullptr) rte_rcu_qsbr_thread_offline(rcu, w.index);
  return 0;
}

template <bool kHooked>
int RunWorkerInMode(Worker& w) {
  switch (w.engine->config.mode) {
    case ForwardingMode::kIo:
      return RunWorker<&ForwardIo, kHooked>(w);
    case ForwardingMode::kMac:
      return RunWorker<&ForwardMac, kHooked>(w);
    case ForwardingMode::kL3:
      break;
  }
  return RunWorker<&ForwardL3, kHooked>(w);
}

}  // namespace

int WorkerMain(void* arg) { return RunWorkerInMode<false>(*static_cast<Worker*>(arg)); }

int HookedWorkerMain(void* arg) { return RunWorkerInMode<true>(*static_cast<Worker*>(arg)); }

}  // namespace skbnf::dpdk
