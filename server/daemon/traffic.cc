// SPDX-License-Identifier: BSD-3-Clause
#include "server/daemon/traffic.h"

#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"

namespace skbnf::dpdk {
namespace {

void Put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void Put32(uint8_t* p, uint32_t v) {
  Put16(p, static_cast<uint16_t>(v >> 16));
  Put16(p + 2, static_cast<uint16_t>(v));
}

uint16_t Checksum(const uint8_t* p, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < n; i += 2) sum += (uint32_t{p[i]} << 8) | p[i + 1];
  if (n % 2) sum += uint32_t{p[n - 1]} << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

struct PcapHeader {
  uint32_t magic = 0xa1b2c3d4;
  uint16_t major = 2, minor = 4;
  int32_t thiszone = 0;
  uint32_t sigfigs = 0, snaplen = 65535, linktype = 1;  // Ethernet
};
struct PcapRecord {
  uint32_t sec, usec, caplen, len;
};

}  // namespace

Frame UdpFrame(uint32_t src_ip, uint32_t dst_ip, uint8_t ttl, uint16_t frame_len, uint16_t src_port,
               uint16_t dst_port) {
  if (frame_len < 42) frame_len = 42;
  Frame f;
  f.bytes.assign(frame_len, 0);
  uint8_t* p = f.bytes.data();
  const uint8_t dst_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0xfe};
  const uint8_t src_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0xfd};
  std::memcpy(p, dst_mac, 6);
  std::memcpy(p + 6, src_mac, 6);
  Put16(p + 12, 0x0800);
  uint8_t* ip = p + 14;
  const uint16_t ip_len = static_cast<uint16_t>(frame_len - 14);
  ip[0] = 0x45;
  Put16(ip + 2, ip_len);
  Put16(ip + 4, 1);  // id
  ip[8] = ttl;
  ip[9] = 17;  // UDP
  Put32(ip + 12, src_ip);
  Put32(ip + 16, dst_ip);
  Put16(ip + 10, Checksum(ip, 20));
  uint8_t* udp = ip + 20;
  Put16(udp, src_port);
  Put16(udp + 2, dst_port);
  Put16(udp + 4, static_cast<uint16_t>(ip_len - 20));
  for (size_t i = 42; i < frame_len; ++i) p[i] = static_cast<uint8_t>(i);
  return f;
}

std::vector<Frame> DemoFrames(uint32_t count,
                              const std::vector<std::pair<uint32_t, uint8_t>>& prefixes,
                              uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<uint32_t> used;
  std::vector<Frame> out;
  out.reserve(count);
  for (uint32_t i = 0; out.size() < count; ++i) {
    uint32_t dst;
    if (i % 64 == 63 || prefixes.empty()) {
      dst = (192u << 24) | (2u << 8) | static_cast<uint32_t>(rng() % 256);  // 192.0.2.x
    } else {
      const auto& [prefix, len] = prefixes[rng() % prefixes.size()];
      const uint32_t host = len == 32 ? 0 : static_cast<uint32_t>(rng()) & (~0u >> len);
      dst = prefix | host;
    }
    if (!used.insert(dst).second && i < count * 4) continue;
    const uint8_t ttl = (i % 128 == 127) ? 1 : 64;
    const uint32_t src = (172u << 24) | (16u << 16) | static_cast<uint32_t>(rng() % 65536);
    out.push_back(UdpFrame(src, dst, ttl, 64, static_cast<uint16_t>(1024 + rng() % 1000)));
  }
  return out;
}

absl::Status WritePcap(const std::string& path, const std::vector<Frame>& frames) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return absl::InternalError(absl::StrCat("cannot write ", path));
  PcapHeader h;
  bool ok = std::fwrite(&h, sizeof(h), 1, f) == 1;
  uint32_t t = 0;
  for (const Frame& fr : frames) {
    PcapRecord r{1, t++, static_cast<uint32_t>(fr.bytes.size()),
                 static_cast<uint32_t>(fr.bytes.size())};
    ok = ok && std::fwrite(&r, sizeof(r), 1, f) == 1 &&
         std::fwrite(fr.bytes.data(), fr.bytes.size(), 1, f) == 1;
  }
  ok = (std::fclose(f) == 0) && ok;
  return ok ? absl::OkStatus() : absl::InternalError(absl::StrCat("short write to ", path));
}

}  // namespace skbnf::dpdk
