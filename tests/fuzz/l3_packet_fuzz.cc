// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target: the l3 forwarding mode's per-packet code (dataplane/dpdk/l3_packet.h, the very
// functions forward.cc's ForwardL3 calls) on arbitrary frames: truncated, bad IHL, options,
// fragments, bad checksums, TTL 0/1/2, non-IPv4, VLAN-tagged.
//
// Input: byte 0 is a set of fix-ups, the rest is the frame (copied into a buffer of exactly its
// length, so ASan reports any read past the end). Fix-ups make valid-looking packets common,
// the raw bytes cover everything else:
//   bit 0  ethertype := IPv4          bit 2  total_length := what the frame holds
//   bit 1  version := 4               bit 3  header checksum := correct (last, over the IHL)
// Invariants:
//   - L3Check's verdict equals an independent byte-level reference (RFC 791 checks written out
//     here without DPDK): not_ipv4, bad_header, ttl_expired or "route";
//   - a refused frame is left unchanged;
//   - a routed frame after L3Rewrite with a next hop chosen from its destination (one of three
//     output ports, or no route): dst MAC = the hop's, src MAC = the port's, TTL one less, the
//     header checksum equal to a full recomputation (so valid), every other byte unchanged; and
//     L3Check on the result says "route" again, or ttl_expired when the TTL was 2.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dataplane/dpdk/l3_packet.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using skbnf::dpdk::kDropBadHeader;
using skbnf::dpdk::kDropNotIpv4;
using skbnf::dpdk::kDropTtlExpired;
using skbnf::dpdk::kL3Route;

constexpr size_t kEth = 14;

uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

// One's-complement sum of `n` bytes (n even), folded.
uint16_t OnesSum(const uint8_t* p, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i + 1 < n; i += 2) s += Be16(p + i);
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

int Reference(const uint8_t* f, size_t len) {
  if (len < kEth || f[12] != 0x08 || f[13] != 0x00) return kDropNotIpv4;
  const uint8_t* ip = f + kEth;
  const size_t room = len - kEth;
  if (room < 20) return kDropBadHeader;
  const size_t ihl = (ip[0] & 0xf) * 4u;
  const size_t total = Be16(ip + 2);
  if ((ip[0] >> 4) != 4 || ihl < 20 || ihl > room || total < ihl || total > room) {
    return kDropBadHeader;
  }
  if (OnesSum(ip, ihl) != 0xffff) return kDropBadHeader;
  if (ip[8] <= 1) return kDropTtlExpired;
  return kL3Route;
}

void FixUp(uint8_t bits, std::vector<uint8_t>& f) {
  if ((bits & 1) && f.size() >= kEth) f[12] = 0x08, f[13] = 0x00;
  if (f.size() < kEth + 20) return;
  uint8_t* ip = f.data() + kEth;
  if (bits & 2) ip[0] = static_cast<uint8_t>(0x40 | (ip[0] & 0xf));
  const size_t room = f.size() - kEth;
  if (bits & 4) {
    const size_t total = room > 0xffff ? 0xffff : room;
    ip[2] = static_cast<uint8_t>(total >> 8), ip[3] = static_cast<uint8_t>(total);
  }
  const size_t ihl = (ip[0] & 0xf) * 4u;
  if ((bits & 8) && ihl >= 20 && ihl <= room) {
    ip[10] = ip[11] = 0;
    const uint16_t c = static_cast<uint16_t>(~OnesSum(ip, ihl));
    ip[10] = static_cast<uint8_t>(c >> 8), ip[11] = static_cast<uint8_t>(c);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<uint8_t> frame(data + 1, data + size);
  FixUp(data[0], frame);
  const std::vector<uint8_t> before = frame;
  // Exactly the frame's bytes on the heap: a read past `len` is an ASan report.
  uint8_t* buf = new uint8_t[frame.size() + (frame.empty() ? 1 : 0)];
  if (!frame.empty()) std::memcpy(buf, frame.data(), frame.size());
  const uint32_t len = static_cast<uint32_t>(frame.size());

  const int verdict = skbnf::dpdk::L3Check(buf, len);
  const int expected = Reference(before.data(), before.size());
  FUZZ_CHECK(verdict == expected, "L3Check says %d, the reference %d (len %u)", verdict, expected,
             len);
  if (verdict != kL3Route) {
    FUZZ_CHECK(len == 0 || std::memcmp(buf, before.data(), len) == 0,
               "a refused frame was modified");
    delete[] buf;
    return 0;
  }

  // The route lookup stays in ForwardL3; here a next hop from the destination's low bits.
  const uint32_t dst = skbnf::dpdk::L3Destination(buf);
  FUZZ_CHECK(dst == (uint32_t{before[30]} << 24 | uint32_t{before[31]} << 16 |
                     uint32_t{before[32]} << 8 | before[33]),
             "destination %08x", dst);
  if ((dst & 3) == 0) {  // no route: ForwardL3 drops it as no_route, untouched
    delete[] buf;
    return 0;
  }
  const skbnf::dpdk::MacAddr hop_mac = {0x02, 0, 0, 0, 1, static_cast<uint8_t>(dst >> 2)};
  rte_ether_addr port_mac = {{0x02, 0, 0, 0, 0, static_cast<uint8_t>(dst & 3)}};
  skbnf::dpdk::L3Rewrite(buf, skbnf::dpdk::MakeL3Hop(dst & 3, hop_mac, port_mac));

  FUZZ_CHECK(std::memcmp(buf, hop_mac.data(), 6) == 0, "dst MAC not the next hop's");
  FUZZ_CHECK(std::memcmp(buf + 6, port_mac.addr_bytes, 6) == 0, "src MAC not the port's");
  const uint8_t* ip = buf + kEth;
  const size_t ihl = (ip[0] & 0xf) * 4u;
  FUZZ_CHECK(ip[8] == before[kEth + 8] - 1, "TTL %u -> %u", before[kEth + 8], ip[8]);
  for (size_t i = 12; i < len; ++i) {
    if (i == kEth + 8 || i == kEth + 10 || i == kEth + 11) continue;
    FUZZ_CHECK(buf[i] == before[i], "byte %zu changed (%02x -> %02x)", i, before[i], buf[i]);
  }
  FUZZ_CHECK(OnesSum(ip, ihl) == 0xffff, "header checksum invalid after the rewrite");
  std::vector<uint8_t> copy(ip, ip + ihl);
  copy[10] = copy[11] = 0;
  const uint16_t full = static_cast<uint16_t>(~OnesSum(copy.data(), ihl));
  FUZZ_CHECK(Be16(ip + 10) == full, "incremental checksum %04x, full recomputation %04x",
             Be16(ip + 10), full);
  const int again = skbnf::dpdk::L3Check(buf, len);
  FUZZ_CHECK(again == (before[kEth + 8] == 2 ? kDropTtlExpired : kL3Route),
             "the forwarded packet (TTL %u) checks as %d", ip[8], again);
  delete[] buf;
  return 0;
}
