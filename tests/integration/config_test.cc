// skbnfd's configuration file and the demo's generators (no EAL needed).
#include "dataplane/dpdk/config.h"

#include <set>

#include "dataplane/dpdk/net_text.h"
#include "dataplane/dpdk/traffic.h"
#include "gtest/gtest.h"

namespace skbnf::dpdk {
namespace {

TEST(ConfigTest, ExampleFileParses) {
  auto c = LoadConfig(std::string(SKBNF_SOURCE_DIR) + "/dataplane/dpdk/skbnfd.conf.example");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->engine.mode, Mode::kL3);
  EXPECT_EQ(c->engine.strategy, "recycle+magazine");
  EXPECT_EQ(c->engine.mbufs, 16384u);
  ASSERT_EQ(c->engine.ports.size(), 2u);
  EXPECT_EQ(c->engine.ports[0].peer, "net_null1");
  EXPECT_EQ(c->engine.ports[1].dst_mac, "02:00:00:00:00:11");
  ASSERT_EQ(c->engine.workers.size(), 1u);
  EXPECT_EQ(c->engine.workers[0].lcore, 1u);
  EXPECT_EQ(c->engine.workers[0].rx.size(), 2u);
  EXPECT_EQ(c->engine.routes.size(), 1002u);
  EXPECT_NE(std::find(c->eal.begin(), c->eal.end(), "--vdev=net_null1"), c->eal.end());
}

TEST(ConfigTest, ErrorsNameTheLineAndWhatToWrite) {
  auto c = ParseConfig("mode l3\n\n# comment\nmode l2\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("line 4"), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find("write io, mac or l3"), std::string::npos) << c.status();
}

TEST(ConfigTest, UnknownDirectiveListsKnownOnes) {
  auto c = ParseConfig("bogus 1\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("line 1"), std::string::npos);
  EXPECT_NE(c.status().message().find("routes_random"), std::string::npos);
}

TEST(ConfigTest, RejectsBadValues) {
  EXPECT_FALSE(ParseConfig("burst 100000\n").ok());
  EXPECT_FALSE(ParseConfig("route 10.0.0.1/8 p 02:00:00:00:00:01\n").ok());  // host bits
  EXPECT_FALSE(ParseConfig("route 10.0.0.0/8 p 02:00:00:00:01\n").ok());     // short MAC
  EXPECT_FALSE(ParseConfig("port p0 color=red\n").ok());
  EXPECT_FALSE(ParseConfig("colour maybe\n").ok());
  // Fixed-arity directives refuse extra words (found by tests/fuzz/config_fuzz.cc's invariant).
  EXPECT_FALSE(ParseConfig("mode l3 io\n").ok());
  EXPECT_FALSE(ParseConfig("route 10.0.0.0/8 p 02:00:00:00:00:01 extra\n").ok());
  EXPECT_FALSE(ParseConfig("burst 32 64\n").ok());
  EXPECT_TRUE(ParseConfig("colour on\nworker 3 net_null0:1 0\n").ok());
}

TEST(ConfigTest, PciDeviceEnvBecomesEalAllowList) {
  auto a = EalArgsFromPciDeviceEnv({"HOME=/root", "PCIDEVICE_INTEL_COM_SRIOV_B=0000:3b:02.1",
                                    "PCIDEVICE_INTEL_COM_SRIOV_A=0000:3b:02.0,0000:3b:02.2"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, (std::vector<std::string>{"-a", "0000:3b:02.0", "-a", "0000:3b:02.2", "-a",
                                          "0000:3b:02.1"}));
  auto none = EalArgsFromPciDeviceEnv({"PATH=/bin"});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto bad = EalArgsFromPciDeviceEnv({"PCIDEVICE_X=eth0"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("PCIDEVICE_X"), std::string::npos);
}

// The default route goes through the configuration file like any other (the same parser as the
// engine and the API); a prefix with host bits set or a bad MAC is refused naming the line.
TEST(ConfigTest, DefaultRouteAndTheOneParser) {
  auto dc = ParseConfig("route 0.0.0.0/0 p 02:00:00:00:00:01\n");
  ASSERT_TRUE(dc.ok()) << dc.status();
  ASSERT_EQ(dc->engine.routes.size(), 1u);
  EXPECT_EQ(dc->engine.routes[0].prefix, "0.0.0.0/0");
  auto bad = ParseConfig("mode l3\nroute 0.0.0.1/0 p 02:00:00:00:00:01\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("0.0.0.0/0"), std::string::npos) << bad.status();
  EXPECT_FALSE(ParseConfig("route 10.0.0.0/8 p 2:0:0:0:0:1\n").ok());
  EXPECT_FALSE(ParseConfig("port p dst_mac=02:00:00:00:00\n").ok());
}

TEST(ConfigTest, RandomRoutesAreDistinctDeterministicAndInside10Slash8) {
  auto a = RandomRoutes(10000, "p", 1);
  auto b = RandomRoutes(10000, "p", 1);
  ASSERT_EQ(a.size(), 10000u);
  std::set<std::string> seen;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prefix, b[i].prefix);
    auto parsed = net::ParseIpv4Prefix(a[i].prefix);
    ASSERT_TRUE(parsed.ok()) << a[i].prefix;
    const uint32_t p = parsed->addr;
    const uint8_t d = parsed->len;
    EXPECT_EQ(p >> 24, 10u);
    EXPECT_GE(d, 16);
    EXPECT_LE(d, 24);
    EXPECT_TRUE(seen.insert(a[i].prefix).second) << a[i].prefix;
  }
}

TEST(TrafficTest, DemoFramesHaveDistinctDestinationsAndValidChecksums) {
  std::vector<std::pair<uint32_t, uint8_t>> prefixes = {{0x0a000000, 8}};
  auto frames = DemoFrames(4096, prefixes, 2);
  ASSERT_EQ(frames.size(), 4096u);
  std::set<uint32_t> dst;
  for (const Frame& f : frames) {
    const uint8_t* ip = f.bytes.data() + 14;
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += (ip[i] << 8) | ip[i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    EXPECT_EQ(sum, 0xffffu);
    dst.insert((ip[16] << 24) | (ip[17] << 16) | (ip[18] << 8) | ip[19]);
  }
  EXPECT_EQ(dst.size(), 4096u);
}

TEST(TrafficTest, PcapRoundTrip) {
  std::vector<Frame> frames = {UdpFrame(1, 2, 64), UdpFrame(3, 4, 5, 100)};
  const std::string path = ::testing::TempDir() + "/skbnf_roundtrip.pcap";
  ASSERT_TRUE(WritePcap(path, frames).ok());
  auto back = ReadPcap(path);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].bytes, frames[1].bytes);
}

}  // namespace
}  // namespace skbnf::dpdk
