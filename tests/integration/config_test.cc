// SPDX-License-Identifier: BSD-3-Clause
// skbnfd's configuration file and the demo's generators (no EAL needed).
#include "server/ops/config.h"

#include <cstdio>
#include <set>

#include "absl/strings/match.h"
#include "common/net_text.h"
#include "common/pool_ops.h"
#include "gtest/gtest.h"
#include "server/daemon/traffic.h"
#include "tests/integration/pcap_reader.h"

namespace skbnf::dpdk {
namespace {

TEST(ConfigTest, ExampleFileParses) {
  auto c = LoadConfig(std::string(SKBNF_SOURCE_DIR) + "/server/daemon/skbnfd.conf.example");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->engine.mode, ForwardingMode::kL3);
  EXPECT_EQ(c->engine.strategy.ToString(), "recycle+magazine");
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

// pool_ops is parsed where it arrives (common/pool_ops.h): a bad word is refused at its line.
TEST(ConfigTest, PoolOpsIsParsedAtItsLine) {
  auto c = ParseConfig("pool_ops ring_mp_mc\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->engine.pool_ops, PoolOps::kRingMpMc);
  auto bad = ParseConfig("mode l3\npool_ops ring\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), absl::string_view::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("unknown pool ops 'ring'; write skbnf or ring_mp_mc"),
            absl::string_view::npos)
      << bad.status();
}

// The latency settings at start (common/worker_perf.h's ranges); SetLatency changes them later.
TEST(ConfigTest, LatencySettingsAtStart) {
  auto c = ParseConfig("latency_sample_every 0\nslow_iteration_us 1000\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->engine.latency.sample_every, 0u);
  EXPECT_EQ(c->engine.latency.slow_iteration_us, 1000u);
  EXPECT_EQ(ParseConfig("mode io\n")->engine.latency.sample_every, 256u);  // the default
  for (const char* bad : {"latency_sample_every 1048577\n", "latency_sample_every x\n",
                          "slow_iteration_us 0\n", "slow_iteration_us 10000001\n"}) {
    auto b = ParseConfig(bad);
    ASSERT_FALSE(b.ok()) << bad;
    const std::string key = std::string(bad).substr(0, std::string(bad).find(' '));
    EXPECT_NE(b.status().message().find(key), std::string::npos) << b.status();
    EXPECT_NE(b.status().message().find("line 1"), std::string::npos) << b.status();
  }
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

// The SR-IOV network device plugin (v3.6+) sets PCIDEVICE_<RES>_INFO beside the address
// variable (k8snetworkplumbingwg/sriov-network-device-plugin pkg/resources/pool_stub.go GetEnvs;
// the value below is its json.Marshal output for a vfio-pci VF, pkg/infoprovider/
// genericInfoProvider.go and vfioInfoProvider.go). Before: refused as "not a PCI address", so
// --pcidevice-env never started on a real node.
TEST(ConfigTest, PciDeviceEnvSkipsTheDevicePluginsInfoVariable) {
  auto a = EalArgsFromPciDeviceEnv(
      {"PCIDEVICE_INTEL_COM_SRIOV_B=0000:3b:02.1",
       "PCIDEVICE_INTEL_COM_SRIOV_B_INFO={\"0000:3b:02.1\":{\"generic\":{\"deviceID\":"
       "\"0000:3b:02.1\"},\"vfio\":{\"dev-mount\":\"/dev/vfio/72\",\"mount\":\"/dev/vfio/"
       "vfio\"}}}",
       "PCIDEVICE_INTEL_COM_SRIOV_A=3b:02.0", "PCIDEVICE_INTEL_COM_SRIOV_A_INFO=not json"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, (std::vector<std::string>{"-a", "0000:3b:02.0", "-a", "0000:3b:02.1"}));
}

// Ports named by the Multus network their VF belongs to: `net=<network>` wherever a port is
// named, resolved by skbnfd against the pod's network-status (server/ops/network_status.h). The
// port order is the file's, whatever the device plugin's variables are called.
TEST(ConfigTest, PortsNamedByNetworkResolveEverywhereAPortIsNamed) {
  auto dc = ParseConfig(
      "mode l3\n"
      "port net=access peer=net=skbnf/core dst_mac=02:00:00:00:00:10\n"
      "port net=skbnf/core peer=net=access\n"
      "worker 1 net=access:0 net=skbnf/core\n"
      "route 10.0.0.0/8 net=skbnf/core 02:00:00:00:01:01\n");
  ASSERT_TRUE(dc.ok()) << dc.status();
  EXPECT_TRUE(UsesPortNetworks(*dc));
  EXPECT_EQ(dc->engine.ports[0].name, "net=access");
  std::vector<std::string> asked;
  absl::Status st = ResolvePortNetworks(*dc, [&](absl::string_view n) {
    asked.emplace_back(n);
    return absl::StatusOr<std::string>(absl::EndsWith(n, "core") ? "0000:3b:02.1" : "0000:3b:02.0");
  });
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(asked, (std::vector<std::string>{"access", "skbnf/core"}));  // each once
  EXPECT_EQ(dc->engine.ports[0].name, "0000:3b:02.0");
  EXPECT_EQ(dc->engine.ports[0].peer, "0000:3b:02.1");
  EXPECT_EQ(dc->engine.ports[1].name, "0000:3b:02.1");
  EXPECT_EQ(dc->engine.ports[1].peer, "0000:3b:02.0");
  EXPECT_EQ(dc->engine.workers[0].rx[0], (std::pair<std::string, uint16_t>{"0000:3b:02.0", 0}));
  EXPECT_EQ(dc->engine.workers[0].rx[1].first, "0000:3b:02.1");
  EXPECT_EQ(dc->engine.routes[0].port, "0000:3b:02.1");
  EXPECT_FALSE(UsesPortNetworks(*dc));

  auto plain = ParseConfig("port net_null0\n");
  EXPECT_FALSE(UsesPortNetworks(*plain));
  auto fail = ParseConfig("port net_null0\nport net=gone\n");
  absl::Status err = ResolvePortNetworks(*fail, [](absl::string_view) {
    return absl::StatusOr<std::string>(absl::NotFoundError("no network 'gone'"));
  });
  EXPECT_EQ(err.message(), "port net=gone: no network 'gone'");
}

TEST(ConfigTest, BadNetworkReferencesAreRefusedSayingWhatToWrite) {
  for (const char* bad : {"port net=\n", "port net=a/b/c\n", "port net=a@b@c\n", "port net=@net1\n",
                          "port p peer=net=x:y\n", "worker 1 net=a/:0\n",
                          "route 10.0.0.0/8 net=a@ 02:00:00:00:00:01\n", "port net=a@x/y\n",
                          // found by config_fuzz: routes_random took any net= name, and its
                          // routes then printed as `route` lines the parser refuses
                          "routes_random 10 net=nuwo(erll1\n"}) {
    auto c = ParseConfig(bad);
    EXPECT_FALSE(c.ok()) << bad;
    if (!c.ok()) {
      EXPECT_NE(c.status().message().find("net=<namespace>/access"), std::string::npos)
          << c.status();
    }
  }
  EXPECT_TRUE(ParseConfig("port net=sriov-access.v1 peer=net=ns/core@net2\n").ok());
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

// The demo's pcap writer, read back by libpcap (the reader net_pcap uses to replay it).
TEST(TrafficTest, PcapRoundTrip) {
  std::vector<Frame> frames = {UdpFrame(1, 2, 64), UdpFrame(3, 4, 5, 100)};
  const std::string path = ::testing::TempDir() + "/skbnf_roundtrip.pcap";
  ASSERT_TRUE(WritePcap(path, frames).ok());
  auto back = ReadPcap(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].bytes, frames[0].bytes);
  EXPECT_EQ((*back)[1].bytes, frames[1].bytes);
  std::remove(path.c_str());
  EXPECT_EQ(ReadPcap(path).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace skbnf::dpdk
