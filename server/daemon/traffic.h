// SPDX-License-Identifier: BSD-3-Clause
// Test and demo traffic: IPv4/UDP frames written as a pcap file (classic libpcap format,
// written directly; net_pcap replays it, with infinite_rx=1 for the demo). Reading a capture is
// the tests' (tests/integration/pcap_reader.h, with libpcap): skbnfd never reads one.
#ifndef SKBNF_SERVER_DAEMON_TRAFFIC_H_
#define SKBNF_SERVER_DAEMON_TRAFFIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace skbnf::dpdk {

struct Frame {
  std::vector<uint8_t> bytes;
};

// One Ethernet/IPv4/UDP frame of `frame_len` bytes (>= 42), valid header checksum.
Frame UdpFrame(uint32_t src_ip, uint32_t dst_ip, uint8_t ttl, uint16_t frame_len = 64,
               uint16_t src_port = 1024, uint16_t dst_port = 4789);

// The demo's traffic: `count` frames to `count` distinct destinations picked inside the given
// prefixes (host order prefix, length), so they are routed; every 64th goes to 192.0.2.0/24
// (no route) and every 128th has TTL 1 (ttl_expired), so those drop counters move too.
std::vector<Frame> DemoFrames(uint32_t count,
                              const std::vector<std::pair<uint32_t, uint8_t>>& prefixes,
                              uint64_t seed);

absl::Status WritePcap(const std::string& path, const std::vector<Frame>& frames);

}  // namespace skbnf::dpdk

#endif  // SKBNF_SERVER_DAEMON_TRAFFIC_H_
