// The l3 mode's work on one frame, apart from the route lookup: the header checks (L3Check) and
// the rewrite of a packet that is forwarded (L3Rewrite: TTL - 1 with the RFC 1624 incremental
// checksum update, next hop's MAC as dst, the output port's MAC as src).
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
#ifndef SKBNF_DATAPLANE_DPDK_L3_PACKET_H_
#define SKBNF_DATAPLANE_DPDK_L3_PACKET_H_

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "dataplane/dpdk/engine.h"

namespace skbnf::dpdk {

// Next hop packed in one word so workers read it atomically: MAC (48 bits) << 16 | port.
// 0 is "none" (a MAC of all zeros is not a valid next hop).
inline uint64_t PackHop(uint16_t port, const MacAddr& mac) {
  uint64_t m = 0;
  for (uint8_t b : mac) m = (m << 8) | b;
  return (m << 16) | port;
}
inline MacAddr HopMac(uint64_t hop) {
  MacAddr mac;
  uint64_t m = hop >> 16;
  for (int i = 5; i >= 0; --i) {
    mac[i] = static_cast<uint8_t>(m & 0xff);
    m >>= 8;
  }
  return mac;
}

// The IPv4 header checksum verifies (RFC 1071: the one's complement sum of the header is
// 0xffff). A 20-byte header (no options) is summed as five 32-bit words and folded, the same
// sum as rte_raw_cksum's 16-bit words in a quarter of the instructions.
inline bool L3HeaderSumOk(const rte_ipv4_hdr* ip, uint32_t ihl_bytes) {
  if (ihl_bytes != sizeof(rte_ipv4_hdr)) return rte_raw_cksum(ip, ihl_bytes) == 0xffff;
  uint32_t w[5];
  std::memcpy(w, ip, sizeof(w));
  uint64_t s = uint64_t{w[0]} + w[1] + w[2] + w[3] + w[4];
  s = (s & 0xffffffff) + (s >> 32);
  s = (s & 0xffffffff) + (s >> 32);
  uint32_t t = static_cast<uint32_t>((s & 0xffff) + (s >> 16));
  t = (t & 0xffff) + (t >> 16);
  return t == 0xffff;
}

// L3Check's answer for an IPv4 packet to route (every other answer is a DropReason).
inline constexpr int kL3Route = -1;

// not_ipv4, bad_header (version, IHL, lengths, header checksum), ttl_expired (TTL <= 1), or
// kL3Route.
inline int L3Check(const uint8_t* frame, uint32_t len) {
  const auto* eth = reinterpret_cast<const rte_ether_hdr*>(frame);
  if (len < sizeof(rte_ether_hdr) || eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
    return kDropNotIpv4;
  }
  const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(eth + 1);
  const uint32_t room = len - sizeof(rte_ether_hdr);
  if (room < sizeof(rte_ipv4_hdr)) return kDropBadHeader;
  const uint32_t ihl_bytes = (ip->version_ihl & 0xf) * 4u;
  if ((ip->version_ihl >> 4) != 4 || ihl_bytes < 20 || ihl_bytes > room ||
      rte_be_to_cpu_16(ip->total_length) < ihl_bytes || rte_be_to_cpu_16(ip->total_length) > room ||
      !L3HeaderSumOk(ip, ihl_bytes)) {
    return kDropBadHeader;
  }
  if (ip->time_to_live <= 1) return kDropTtlExpired;
  return kL3Route;
}

// The destination address of a frame L3Check accepted, host byte order.
inline uint32_t L3Destination(const uint8_t* frame) {
  const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(frame + sizeof(rte_ether_hdr));
  return rte_be_to_cpu_32(ip->dst_addr);
}

// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), for the 16-bit word holding TTL and protocol.
inline void L3DecrementTtl(rte_ipv4_hdr* ip) {
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

// A frame L3Check accepted, forwarded to the next hop `hop` (PackHop: its MAC becomes dst) out
// of a port whose MAC is `src`.
inline void L3Rewrite(uint8_t* frame, uint64_t hop, const rte_ether_addr& src) {
  auto* eth = reinterpret_cast<rte_ether_hdr*>(frame);
  L3DecrementTtl(reinterpret_cast<rte_ipv4_hdr*>(eth + 1));
  const uint64_t hop_be = rte_cpu_to_be_64(hop);  // the MAC's 6 bytes first
  std::memcpy(eth->dst_addr.addr_bytes, &hop_be, RTE_ETHER_ADDR_LEN);
  rte_ether_addr_copy(&src, &eth->src_addr);
}

}  // namespace skbnf::dpdk

#endif  // SKBNF_DATAPLANE_DPDK_L3_PACKET_H_
