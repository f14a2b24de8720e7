// SPDX-License-Identifier: BSD-3-Clause
// The l3 mode's work on one frame, apart from the route lookup: the header checks (L3Check) and
// the rewrite of a packet that is forwarded (L3Rewrite: TTL - 1 with the RFC 1624 incremental
// checksum update, then the next hop's Ethernet addresses from its L3Hop).
//
// Why a header of its own: forward.cc's ForwardL3 (the engine) and tests/fuzz/l3_packet_fuzz.cc
// (libFuzzer on arbitrary frames, ASan) run this very code. Everything is inline and touches
// only the frame's bytes, so the packet path pays no call; the lookup (rte_lpm, next-hop table)
// and the bucketing stay in ForwardL3.
//
// The checks read only the first `len` bytes (the first segment's data_len): a frame shorter
// than Ethernet + a 20-byte IPv4 header is never read past its end. VLAN-tagged frames (0x8100)
// are not_ipv4; IPv4 options (IHL > 5) are checked and kept; fragments are forwarded like any
// packet (a router does not reassemble).
//
// Cost (issue 11): L3Check tests the common frame (untagged IPv4, 20-byte header) with one
// compare of ethertype + version + IHL, one of the total length, and a checksum test of three
// loads, two end-around-carry adds and a divisibility test (the one's complement sum of a
// header is 0xffff exactly when the plain sum of its 16-bit words is a non-zero multiple of
// 0xffff); anything else takes L3CheckAny, the rules written out one by one. L3Rewrite writes
// the 12 address bytes precomputed per next hop (L3Hop: two stores) and updates TTL and
// checksum on the field as stored (one's complement sums do not depend on byte order).
#ifndef SKBNF_DATAPLANE_DPDK_L3_PACKET_H_
#define SKBNF_DATAPLANE_DPDK_L3_PACKET_H_

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/net_text.h"
#include "dataplane/dpdk/drop_reasons.h"

namespace skbnf::dpdk {

using net::MacAddr;

// Next hop packed in one word: MAC (48 bits) << 16 | port. 0 is "none" (a MAC of all zeros is
// not a valid next hop). routes.cc keys its next-hop ids by it.
inline uint64_t PackHop(uint16_t port, const MacAddr& mac) {
  uint64_t m = 0;
  for (uint8_t b : mac) m = (m << 8) | b;
  return (m << 16) | port;
}

// A next hop as the packet path applies it: the first 12 bytes of a forwarded frame (the next
// hop's MAC as destination, the output port's MAC as source) and the output port. The engine
// keeps a table of these indexed by the LPM's next-hop id (routes.cc); an entry is written once,
// before its id is published, and never changes. `port` kL3NoPort: no route (entry 0).
struct alignas(16) L3Hop {
  uint8_t eth[12];
  uint16_t port;
};
inline constexpr uint16_t kL3NoPort = 0xffff;

inline L3Hop MakeL3Hop(uint16_t port, const MacAddr& next_hop, const rte_ether_addr& src) {
  L3Hop h{};
  std::memcpy(h.eth, next_hop.data(), RTE_ETHER_ADDR_LEN);
  std::memcpy(h.eth + RTE_ETHER_ADDR_LEN, src.addr_bytes, RTE_ETHER_ADDR_LEN);
  h.port = port;
  return h;
}

// The IPv4 header checksum verifies (RFC 1071: the one's complement sum of the header is
// 0xffff), any IHL.
inline bool L3HeaderSumOk(const rte_ipv4_hdr* ip, uint32_t ihl_bytes) {
  return rte_raw_cksum(ip, ihl_bytes) == 0xffff;
}

// The same for a 20-byte header whose first byte is 0x45. The one's complement sum of 16-bit
// words is 0xffff exactly when their plain sum is a multiple of 0xffff and not 0 (the first
// byte makes it non-zero). 2^16, 2^32 and 2^64 are all 1 modulo 0xffff, so the header can be
// summed as two 64-bit words and one 32-bit word, each carry out of 64 bits added back as 1,
// and the test is one multiplication (the compiler's divisibility test for `% 0xffff == 0`).
// Byte order does not matter: a byte-swapped sum is 0xffff when the sum is.
inline bool L3PlainHeaderSumOk(const rte_ipv4_hdr* ip) {
  uint64_t a, b;
  uint32_t c;
  std::memcpy(&a, ip, 8);
  std::memcpy(&b, reinterpret_cast<const uint8_t*>(ip) + 8, 8);
  std::memcpy(&c, reinterpret_cast<const uint8_t*>(ip) + 16, 4);
  uint64_t s;
  s = a + b;
  s += s < a;  // cannot wrap: after a carry out, s <= 2^64 - 2
  const uint64_t t = s + c;
  s = t + (t < s);
  return s % 0xffff == 0;
}

// L3Check's answer for an IPv4 packet to route (every other answer is a DropReason).
inline constexpr int kL3Route = -1;

// The general checks, one rule at a time (L3Check's path for anything but the common frame).
inline int L3CheckAny(const uint8_t* frame, uint32_t len) {
  const auto* eth = reinterpret_cast<const rte_ether_hdr*>(frame);
  if (len < sizeof(rte_ether_hdr) || eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
    return kDropNotIpv4;
  }
  const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(eth + 1);
  const uint32_t room = len - sizeof(rte_ether_hdr);
  if (room < sizeof(rte_ipv4_hdr)) return kDropBadHeader;
  const uint32_t ihl_bytes = (ip->version_ihl & 0xf) * 4u;
  const uint32_t total = rte_be_to_cpu_16(ip->total_length);
  if ((ip->version_ihl >> 4) != 4 || ihl_bytes < 20 || ihl_bytes > room || total < ihl_bytes ||
      total > room || !L3HeaderSumOk(ip, ihl_bytes)) {
    return kDropBadHeader;
  }
  if (ip->time_to_live <= 1) return kDropTtlExpired;
  return kL3Route;
}

// not_ipv4, bad_header (version, IHL, lengths, header checksum), ttl_expired (TTL <= 1), or
// kL3Route.
inline int L3Check(const uint8_t* frame, uint32_t len) {
  constexpr uint32_t kPlain = sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr);
  if (__builtin_expect(len >= kPlain, 1)) {
    // Ethertype, then version 4 and IHL 5: bytes 12..14 are 08 00 45.
    uint32_t w;
    std::memcpy(&w, frame + 12, 4);
    if (__builtin_expect((w & RTE_BE32(0xffffff00)) == RTE_BE32(0x08004500), 1)) {
      const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(frame + sizeof(rte_ether_hdr));
      // total_length in [20, room]: below 20 wraps to a large value.
      if (rte_be_to_cpu_16(ip->total_length) - 20u > len - kPlain) return kDropBadHeader;
      if (!L3PlainHeaderSumOk(ip)) return kDropBadHeader;
      return ip->time_to_live > 1 ? kL3Route : kDropTtlExpired;
    }
  }
  return L3CheckAny(frame, len);
}

// The destination address of a frame L3Check accepted, host byte order.
inline uint32_t L3Destination(const uint8_t* frame) {
  const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(frame + sizeof(rte_ether_hdr));
  return rte_be_to_cpu_32(ip->dst_addr);
}

// TTL - 1 and RFC 1624 eqn. 3 for the checksum: HC' = ~(~HC + ~m + m'), m the 16-bit word
// holding TTL and protocol. With m' = m - 0x0100 (TTL >= 2 here: no borrow), ~m + m' is 0xfeff
// whatever m is, so HC' = ~(~HC + K) with K = 0xfeff and one end-around carry, which works out
// to HC - K when HC >= K and HC + (0xffff - K) otherwise: (HC + 0xffff - K) mod 0xffff, one add
// and one conditional subtract. Computed on the field as stored, with K in network order (byte
// order does not change one's complement sums): no byte swap.
inline void L3DecrementTtl(rte_ipv4_hdr* ip) {
  constexpr uint32_t kK = RTE_BE16(0xfeff);
  ip->time_to_live--;
  uint32_t c = uint32_t{ip->hdr_checksum} + (0xffff - kK);
  if (c >= 0xffff) c -= 0xffff;
  ip->hdr_checksum = static_cast<rte_be16_t>(c);
}

// A frame L3Check accepted, forwarded to the next hop `hop` (its MACs become dst and src).
inline void L3Rewrite(uint8_t* frame, const L3Hop& hop) {
  L3DecrementTtl(reinterpret_cast<rte_ipv4_hdr*>(frame + sizeof(rte_ether_hdr)));
  std::memcpy(frame, hop.eth, sizeof(hop.eth));
}

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_L3_PACKET_H_
