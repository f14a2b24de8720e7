// SPDX-License-Identifier: BSD-3-Clause
// AF_XDP ports at stop: the mbufs net_af_xdp leaves in the kernel's rings, taken back.
//
// Where they go. DPDK 22.11's net_af_xdp (drivers/net/af_xdp/rte_eth_af_xdp.c, built with
// XDP_UMEM_UNALIGNED_CHUNK_FLAG, i.e. on any kernel header >= 5.4, as Debian's is) registers the
// mbuf pool's own memory as the UMEM and hands the kernel mbufs by address:
//   xdp_umem_configure  UMEM base = the pool's first memory chunk rounded down to a page
//                       (get_base_addr), frame = one pool element
//   xsk_configure       allocates ETH_AF_XDP_DFLT_NUM_DESCS (2,048) mbufs per queue and puts
//                       them on the fill ring (reserve_fill_queue_zc: addr = mbuf - buffer -
//                       header_size)
//   af_xdp_rx_zc        takes received ones off the RX ring and refills the fill ring
//   af_xdp_tx_zc        puts mbufs on the TX ring; pull_umem_cq frees them off the completion
//                       ring on a later TX call
//   eth_dev_stop        sets the link down, nothing else
//   eth_dev_close       xsk_socket__delete, xsk_umem__delete, xdp_umem_destroy (mb_pool = NULL)
// So whatever sits on the fill, RX, TX or completion ring when the port closes is never freed:
// issue 22's "populated 8192 != store 4096" is 2 ports x 2,048 fill-ring mbufs, with skbnf's
// pool and ring_mp_mc alike. rte_dev_remove ends in the same eth_dev_close.
//
// What the engine does instead (Stop: workers stopped -> TakeBack -> close -> free): it reads
// the four rings of every XDP socket of the process as the kernel shares them, an independent
// source (not the pool's counters): the PMD (libxdp) mmaps each ring on the socket at a fixed
// page offset (linux/if_xdp.h: XDP_PGOFF_RX_RING 0, XDP_PGOFF_TX_RING 0x80000000,
// XDP_UMEM_PGOFF_FILL_RING 0x100000000, XDP_UMEM_PGOFF_COMPLETION_RING 0x180000000);
// /proc/self/maps names that mapping `socket:[inode]` with that offset; getsockopt(SOL_XDP,
// XDP_MMAP_OFFSETS) on the socket says where producer, consumer and entries are in it. The
// entries from consumer to producer are the mbufs that ring holds. The kernel publishes its
// fill-ring consumer at every RX flush (net/xdp/xsk.c xsk_flush: __xskq_cons_release(fq)), so
// with the workers stopped the window holds no stale entry. Each address becomes an mbuf as the
// PMD computes it (buffer + (addr & XSK_UNALIGNED_BUF_ADDR_MASK) + header_size), is checked to
// be one of the pool's objects, and is taken once (an entry moving from fill to RX between two
// reads shows twice). After close nothing in the kernel refers to them: the engine frees them,
// and the final audit is exact again. A real leak elsewhere still fails it: only ring entries
// are taken back.
//
// Limits (written down, not hidden): a ring's entry count is read from its mapping's length
// (page-rounded), exact for rings of >= 256 entries (DPDK's fill ring is 4,096, completion
// 2,048, RX/TX the port's ring size); the UMEM base assumes one AF_XDP mempool (the engine has
// one) — an address outside the pool is counted as `foreign` and left alone.
#include <linux/if_xdp.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "dataplane/dpdk/engine_state.h"

#ifndef SOL_XDP
#define SOL_XDP 283
#endif

namespace skbnf::dpdk {
namespace {

enum RingKind { kRx = 0, kTx, kFill, kCompletion, kNumRings };

struct Mapping {
  uintptr_t start = 0;
  size_t length = 0;
};

struct XskSocket {
  int fd = -1;
  xdp_mmap_offsets off{};
  Mapping ring[kNumRings];
};

// XDP sockets of this process by inode, with their fds and mmap offsets.
std::map<uint64_t, XskSocket> XdpSockets() {
  std::map<uint64_t, XskSocket> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code lec;
    const std::string target = std::filesystem::read_symlink(entry.path(), lec).string();
    absl::string_view t = target;
    if (lec || !absl::ConsumePrefix(&t, "socket:[") || !absl::ConsumeSuffix(&t, "]")) continue;
    uint64_t ino = 0;
    int fd = -1;
    if (!absl::SimpleAtoi(t, &ino) || !absl::SimpleAtoi(entry.path().filename().string(), &fd)) {
      continue;
    }
    XskSocket s;
    socklen_t len = sizeof(s.off);
    // Only an AF_XDP socket answers SOL_XDP options (others: ENOPROTOOPT).
    if (getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &s.off, &len) != 0) continue;
    if (out.count(ino) == 0) {
      s.fd = fd;
      out[ino] = s;
    }
  }
  // Their ring mappings: "start-end perms offset dev inode path", path "socket:[ino]".
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    if (!(in >> range >> perms >> offset >> dev >> inode >> path)) continue;
    uint64_t ino = 0;
    if (!absl::SimpleAtoi(inode, &ino)) continue;
    auto it = out.find(ino);
    if (it == out.end() || path.rfind("socket:[", 0) != 0) continue;
    const size_t dash = range.find('-');
    uint64_t start = 0, end = 0, off = 0;
    if (dash == std::string::npos || !absl::SimpleHexAtoi(range.substr(0, dash), &start) ||
        !absl::SimpleHexAtoi(range.substr(dash + 1), &end) || !absl::SimpleHexAtoi(offset, &off)) {
      continue;
    }
    int kind = -1;
    if (off == XDP_PGOFF_RX_RING) kind = kRx;
    if (off == XDP_PGOFF_TX_RING) kind = kTx;
    if (off == XDP_UMEM_PGOFF_FILL_RING) kind = kFill;
    if (off == XDP_UMEM_PGOFF_COMPLETION_RING) kind = kCompletion;
    if (kind >= 0) it->second.ring[kind] = {static_cast<uintptr_t>(start), end - start};
  }
  return out;
}

const xdp_ring_offset& OffsetOf(const XskSocket& s, int kind) {
  switch (kind) {
    case kRx:
      return s.off.rx;
    case kTx:
      return s.off.tx;
    case kFill:
      return s.off.fr;
    default:
      return s.off.cr;
  }
}

// RX and TX rings hold struct xdp_desc (addr, len, options); fill and completion hold a u64.
size_t EntrySize(int kind) { return kind == kRx || kind == kTx ? sizeof(xdp_desc) : 8; }

uint32_t LoadIndex(uintptr_t at) {
  return __atomic_load_n(reinterpret_cast<const uint32_t*>(at), __ATOMIC_ACQUIRE);
}

// A ring's shared producer and consumer, if the ring is mapped.
struct Indices {
  bool mapped = false;
  uint32_t prod = 0, cons = 0;
};

Indices RingIndices(const XskSocket& s, int kind) {
  const Mapping& m = s.ring[kind];
  const xdp_ring_offset& o = OffsetOf(s, kind);
  if (m.start == 0 || m.length <= o.desc) return {};
  return {true, LoadIndex(m.start + o.producer), LoadIndex(m.start + o.consumer)};
}

// Entries consumer..producer of one ring: the UMEM addresses it holds.
std::vector<uint64_t> RingAddresses(const XskSocket& s, int kind) {
  std::vector<uint64_t> out;
  const Mapping& m = s.ring[kind];
  const xdp_ring_offset& o = OffsetOf(s, kind);
  const Indices ix = RingIndices(s, kind);
  if (!ix.mapped) return out;
  // Entries: the largest power of two that fits the (page-rounded) mapping.
  uint64_t entries = 1;
  while ((entries * 2) * EntrySize(kind) <= m.length - o.desc) entries *= 2;
  const uint32_t n = ix.prod - ix.cons;
  if (n > entries) return out;  // not a ring we understand: take nothing
  for (uint32_t i = 0; i < n; ++i) {
    const uintptr_t at = m.start + o.desc + ((ix.cons + i) & (entries - 1)) * EntrySize(kind);
    out.push_back(*reinterpret_cast<const uint64_t*>(at));  // xdp_desc starts with addr
  }
  return out;
}

// Buffers the kernel has taken off the fill ring but not (yet) put on an RX ring, plus TX
// descriptors it took but has not completed: held inside the kernel (its xsk_buff_pool), so no
// ring shows their addresses, but the indices count them. Summed over every socket (a shared
// UMEM has one fill ring for several RX rings; the sum is still right).
int64_t HeldInKernel(const std::map<uint64_t, XskSocket>& socks) {
  int64_t n = 0;
  for (const auto& [ino, s] : socks) {
    const Indices fill = RingIndices(s, kFill), rx = RingIndices(s, kRx);
    const Indices tx = RingIndices(s, kTx), cq = RingIndices(s, kCompletion);
    if (fill.mapped) n += static_cast<uint32_t>(fill.cons);
    if (rx.mapped) n -= static_cast<uint32_t>(rx.prod);
    if (tx.mapped) n += static_cast<uint32_t>(tx.cons);
    if (cq.mapped) n -= static_cast<uint32_t>(cq.prod);
  }
  return n;
}

}  // namespace

// Ring occupancy while the port runs ("where are my buffers", issue 22 item 6). Which socket
// belongs to which port: the kernel here has no AF_XDP sock_diag (CONFIG_XDP_SOCKETS_DIAG,
// which would give ifindex and queue), and the socket takes no getsockname, so the engine
// records the inodes that appear across each rte_eth_rx_queue_setup (port_setup.cc: the PMD's
// eth_rx_queue_setup -> xsk_configure creates the socket there; its TX queue q uses RX queue
// q's socket). Per socket, the mbufs the PMD has handed over and not yet taken back:
//   rx = fill producer - RX consumer   (on the fill ring, inside the kernel's xsk_buff_pool
//                                       -- incl. buffers of frames dropped for a full RX
//                                       ring, which go back to its free list -- on the RX ring)
//   tx = TX producer - completion consumer  (on the TX ring, in the kernel's skb, on the
//                                       completion ring until pull_umem_cq frees it)
// Both read with acquire loads while workers run: each index is exact, the pair a moment's
// picture. libxdp maps the fill and completion rings on the UMEM's first socket (it reuses the
// UMEM's fd for it), which is the queue's socket unless shared_umem=1 (unknown then).
std::set<uint64_t> XdpSocketInodes() {
  std::set<uint64_t> out;
  for (const auto& [ino, s] : XdpSockets()) out.insert(ino);
  return out;
}

XskRingMbufs XdpRingMbufs(const std::vector<uint64_t>& inodes) {
  XskRingMbufs r;
  if (inodes.empty()) return r;
  const std::map<uint64_t, XskSocket> socks = XdpSockets();
  for (uint64_t ino : inodes) {
    auto it = socks.find(ino);
    if (it == socks.end()) return XskRingMbufs{};
    const XskSocket& s = it->second;
    // Consumers first: a consumer never passes its producer, so reading it first keeps
    // producer - consumer from going negative when both move between the loads.
    const Indices rx = RingIndices(s, kRx), cq = RingIndices(s, kCompletion);
    const Indices fill = RingIndices(s, kFill), tx = RingIndices(s, kTx);
    if (!rx.mapped || !fill.mapped) return XskRingMbufs{};
    r.rx += static_cast<uint32_t>(fill.prod - rx.cons);
    if (tx.mapped && cq.mapped) r.tx += static_cast<uint32_t>(tx.prod - cq.cons);
  }
  r.known = true;
  return r;
}

XskTakeBack Engine::Impl::TakeBackFromXdpRings() {
  XskTakeBack r;
  bool any = false;
  for (uint16_t id : port_ids) any |= ports[id].driver == "net_af_xdp";
  if (!any || mp == nullptr) return r;
  // TX descriptors the kernel has taken may still be on their way to the completion ring
  // (copy mode: until the skb is freed): wait, bounded, until each TX ring's producer equals
  // its completion ring's producer.
  std::map<uint64_t, XskSocket> socks = XdpSockets();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  for (;;) {
    bool busy = false;
    for (const auto& [ino, s] : socks) {
      const Indices tx = RingIndices(s, kTx), cq = RingIndices(s, kCompletion);
      busy |= tx.mapped && cq.mapped && tx.prod != cq.prod;
    }
    if (!busy || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The pool's objects, to check every address against; the UMEM base as the PMD takes it
  // (get_base_addr: the first memory chunk, rounded down to a page).
  std::set<uintptr_t> objects;
  rte_mempool_obj_iter(
      mp,
      [](rte_mempool*, void* arg, void* obj, unsigned) {
        static_cast<std::set<uintptr_t>*>(arg)->insert(reinterpret_cast<uintptr_t>(obj));
      },
      &objects);
  const rte_mempool_memhdr* hdr = STAILQ_FIRST(&mp->mem_list);
  if (hdr == nullptr) return r;
  const uintptr_t page = static_cast<uintptr_t>(getpagesize());
  const uintptr_t base = reinterpret_cast<uintptr_t>(hdr->addr) & ~(page - 1);
  std::set<uintptr_t> taken;
  // Fill before RX, TX before completion: an entry the kernel moves between two reads is seen
  // at least once (and at most twice: `taken` is a set).
  for (const int kind : {kFill, kRx, kTx, kCompletion}) {
    for (const auto& [ino, s] : socks) {
      for (uint64_t addr : RingAddresses(s, kind)) {
        const uintptr_t m = base + (addr & XSK_UNALIGNED_BUF_ADDR_MASK) + mp->header_size;
        if (objects.count(m) == 0) {
          ++r.foreign;
          continue;
        }
        if (!taken.insert(m).second) continue;
        r.mbufs.push_back(reinterpret_cast<rte_mbuf*>(m));
        ++r.per_ring[kind];
      }
    }
  }
  r.sockets = socks.size();
  const int64_t in_kernel = HeldInKernel(socks);
  r.in_kernel = in_kernel > 0 ? static_cast<uint64_t>(in_kernel) : 0;
  return r;
}

std::string XskTakeBack::ToString() const {
  return absl::StrCat(mbufs.size(), " mbufs taken back from ", sockets,
                      " AF_XDP socket(s)' rings at stop (fill ", per_ring[kFill], ", rx ",
                      per_ring[kRx], ", tx ", per_ring[kTx], ", completion ", per_ring[kCompletion],
                      foreign > 0 ? absl::StrCat("; ", foreign, " entries not in the pool") : "",
                      "); ", in_kernel,
                      " held inside the kernel's AF_XDP buffer pool (fill-ring consumer - RX "
                      "producer + TX consumer - completion producer), never returned by the PMD");
}

void XskTakeBack::Free() {
  for (rte_mbuf* m : mbufs) rte_pktmbuf_free(m);
}

}  // namespace skbnf::dpdk
