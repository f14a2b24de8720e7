// SPDX-License-Identifier: BSD-3-Clause
// Data-plane integration tests: the engine on real DPDK PMDs (net_null, net_ring, net_pcap,
// net_af_packet) with the skbnf mempool driver in the packet path. One EAL per process
// (--no-huge, vdevs created per test and removed after it); ctest runs each test in its own
// process.
//
// No test asserts a rate or a duration: waits are bounded liveness checks ("until N packets
// came out, at most 20 s"), and every assertion is about counts, contents or audits.
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/net_text.h"
#include "dataplane/dpdk/engine.h"
#include "dataplane/dpdk/l3_packet.h"
#include "dataplane/dpdk/skbnf_mempool.h"
#include "dataplane/dpdk/worker_hooks.h"
#include "gtest/gtest.h"
#include "server/daemon/traffic.h"
#include "tests/integration/allocate_all.h"
#include "tests/integration/eal_environment.h"
#include "tests/integration/engine_mempool.h"
#include "tests/integration/pcap_reader.h"
#include "tests/unit/test_pool.h"  // testing::AllSpecs

namespace skbnf::dpdk {
namespace {

using namespace std::chrono_literals;

// EAL, once per process (tests/integration/eal_environment.h, set up in main): main lcore 0
// plus workers 1 and 2 on the first two CPUs we may use.
// ---------------------------------------------------------------------------------------------

struct Totals {
  uint64_t rx = 0, tx = 0, dropped = 0, nombuf = 0, polls = 0;
  uint64_t drops[kNumDropReasons] = {};
};

Totals Sum(const EngineSnapshot& s) {
  Totals t;
  for (const WorkerSnapshot& w : s.workers) {
    t.rx += w.rx_packets;
    t.tx += w.tx_packets;
    t.dropped += w.dropped;
    t.nombuf += w.rx_nombuf;
    t.polls += w.polls;
    for (int r = 0; r < kNumDropReasons; ++r) t.drops[r] += w.drops[r];
  }
  return t;
}

// A swap from text, as skbnfd's flags and config file give it: parsed once, at this edge; the
// engine swaps the parsed spec.
absl::StatusOr<pool::SwapReport> Swap(Engine& e, absl::string_view text,
                                      std::chrono::microseconds timeout = 0us) {
  absl::StatusOr<pool::StrategySpec> spec = pool::StrategySpec::Parse(text);
  if (!spec.ok()) return spec.status();
  return e.SwapStrategy(*spec, timeout);
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds limit = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Waits until the worker on `lcore` has gone round its parked loop twice since this call (its
// own acknowledgement, WorkerSnapshot::parked_loops): the first round may have begun before the
// call, the second began after it, so whatever a round would do (a poll, a packet) is done and
// counted by the time this returns true. "Nothing happened while parked" is then a fact about
// the counters read before the call, not a hope about a sleep being long enough.
bool WaitParkedRounds(Engine& e, unsigned lcore) {
  auto loops = [&]() -> uint64_t {
    for (const WorkerSnapshot& w : e.Snapshot().workers) {
      if (w.lcore == lcore) return w.parked_loops;
    }
    ADD_FAILURE() << "no worker on lcore " << lcore;
    return 0;
  };
  const uint64_t base = loops();
  return WaitFor([&] { return loops() >= base + 2; });
}

std::filesystem::path TempDir() {
  auto d = std::filesystem::temp_directory_path() /
           absl::StrCat("skbnf-it-", getpid(), "-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(d);
  return d;
}

class DataplaneTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (engine_ != nullptr && engine_->running()) (void)engine_->Stop();
    engine_.reset();
    for (const std::string& v : vdevs_) rte_vdev_uninit(v.c_str());
    for (rte_ring* r : rings_) {
      void* obj;
      while (rte_ring_dequeue(r, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
      rte_ring_free(r);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string Vdev(const std::string& driver, const std::string& args = "") {
    static int seq = 0;
    std::string name = absl::StrCat(driver, seq++);
    EXPECT_EQ(rte_vdev_init(name.c_str(), args.c_str()), 0) << name << " " << args;
    vdevs_.push_back(name);
    return name;
  }

  // A net_ring port: the test enqueues into *rx, the port transmits into *tx.
  std::string RingPort(rte_ring** rx, rte_ring** tx, unsigned tx_size = 4096) {
    static int seq = 0;
    const std::string n = absl::StrCat("it", seq++);
    *rx = rte_ring_create(absl::StrCat(n, "_rx").c_str(), 4096, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    *tx = rte_ring_create(absl::StrCat(n, "_tx").c_str(), tx_size, 0, RING_F_SC_DEQ);
    EXPECT_NE(*rx, nullptr);
    EXPECT_NE(*tx, nullptr);
    rings_.push_back(*rx);
    rings_.push_back(*tx);
    EXPECT_GE(rte_eth_from_rings(n.c_str(), rx, 1, tx, 1, 0), 0);
    vdevs_.push_back(absl::StrCat("net_ring_", n));
    return vdevs_.back();
  }

  const std::filesystem::path& Dir() {
    if (dir_.empty()) dir_ = TempDir();
    return dir_;
  }

  EngineConfig Config(ForwardingMode mode, std::vector<PortSpec> ports,
                      std::vector<WorkerSpec> workers, const std::string& strategy = "magazine") {
    EngineConfig c;
    c.mode = mode;
    c.strategy = pool::StrategySpec::Parse(strategy).value();
    c.ports = std::move(ports);
    c.workers = std::move(workers);
    c.pool_debug = true;  // double and foreign frees are counted (and fail the audit)
    return c;
  }

  // io between two new net_null ports, each forwarding to the other, one worker (lcore 1)
  // polling both.
  EngineConfig NullIoLoop(const std::string& strategy = "magazine") {
    const std::string a = Vdev("net_null"), b = Vdev("net_null");
    return Config(ForwardingMode::kIo, {{a, b, ""}, {b, a, ""}}, {{1, {{a, 0}, {b, 0}}}}, strategy);
  }

  Engine& Make(const EngineConfig& c) {
    auto e = Engine::Create(c);
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok()) std::abort();
    engine_ = std::move(*e);
    return *engine_;
  }

  uint16_t PortId(const std::string& name) {
    uint16_t id = 0;
    EXPECT_EQ(rte_eth_dev_get_port_by_name(name.c_str(), &id), 0) << name;
    return id;
  }

  // Copies frames into mbufs of the engine's pool and enqueues them on a ring port's RX ring.
  void Inject(rte_ring* rx, const std::vector<Frame>& frames) {
    for (const Frame& f : frames) {
      rte_mbuf* m = rte_pktmbuf_alloc(MempoolOf(*engine_));
      ASSERT_NE(m, nullptr);
      char* p = rte_pktmbuf_append(m, static_cast<uint16_t>(f.bytes.size()));
      ASSERT_NE(p, nullptr);
      memcpy(p, f.bytes.data(), f.bytes.size());
      while (rte_ring_enqueue(rx, m) != 0) std::this_thread::sleep_for(100us);
    }
  }

  // Dequeues up to everything from a TX ring; returns the frames and frees the mbufs.
  std::vector<Frame> Drain(rte_ring* tx, size_t max = SIZE_MAX) {
    std::vector<Frame> out;
    void* obj;
    while (out.size() < max && rte_ring_dequeue(tx, &obj) == 0) {
      auto* m = static_cast<rte_mbuf*>(obj);
      Frame f;
      f.bytes.assign(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_mtod(m, uint8_t*) + m->data_len);
      out.push_back(std::move(f));
      rte_pktmbuf_free(m);
    }
    return out;
  }

  void ExpectExactAudit() {
    ASSERT_TRUE(engine_->Stop().ok());
    const AuditReport& a = engine_->final_audit();
    EXPECT_TRUE(a.exact);
    EXPECT_TRUE(a.ok) << a.message;
    EXPECT_EQ(a.available, a.populated) << a.message;
    if (a.has_pool) {
      EXPECT_EQ(a.pool.double_frees, 0u);
      EXPECT_EQ(a.pool.foreign_frees, 0u);
    }
  }

  std::unique_ptr<Engine> engine_;
  std::vector<std::string> vdevs_;
  std::vector<rte_ring*> rings_;
  std::filesystem::path dir_;
};

// ---------------------------------------------------------------------------------------------
// net_null: forwarding and conservation.

TEST_F(DataplaneTest, NullIoForwardsAndConserves) {
  Engine& e = Make(NullIoLoop());
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx > 1'000'000; }));
  const AuditReport running = e.Audit();  // approximate while traffic flows
  EXPECT_FALSE(running.exact);
  EXPECT_TRUE(running.ok) << running.message;
  EXPECT_LE(running.available, running.populated);
  ASSERT_TRUE(e.Stop().ok());
  EXPECT_TRUE(e.Audit().exact);  // after Stop: the exact one
  const Totals t = Sum(e.Snapshot());
  EXPECT_EQ(t.rx, t.tx + t.dropped);  // in = out + counted drops
  // Every freed mbuf went back through the skbnf driver: pool frees == allocs on the worker.
  const WorkerSnapshot w = e.Snapshot().workers.at(0);
  EXPECT_EQ(w.pool.allocs, t.rx);
  EXPECT_EQ(w.pool.frees, t.rx);
  EXPECT_TRUE(e.final_audit().ok) << e.final_audit().message;
  EXPECT_TRUE(e.final_audit().exact);
}

// Issue 11: the pool's per-core counters count every buffer, whichever path served it (the
// single-object inline hit net_null's TX takes, or the chain), and say which layer served it:
// the top layer's hits + misses are the engine's packets, each layer's misses are what the
// layer below handed out, the bottom layer's misses what the store did. Debug off here: the
// debug switch turns the inline path off, and the path under test is the production one.
TEST_F(DataplaneTest, PerLayerCountersSumToPacketCounts) {
  using pool::Layer;
  struct Case {
    const char* spec;
    std::vector<Layer> layers;  // top first
  };
  const std::vector<Case> cases = {
      {"headpool", {Layer::kHeadPool}},
      {"magazine", {Layer::kMagazine}},
      {"headpool+magazine", {Layer::kHeadPool, Layer::kMagazine}},
      {"recycle+magazine", {Layer::kRecycle, Layer::kMagazine}},
      // DPDK's own lcore cache plays the lcache layer (skbnf_mempool.h): net_null's inline
      // rte_mempool_get/put never reach the ops on a hit, and the worker's regions count them.
      {"lcache:size=64+headpool", {Layer::kLcache, Layer::kHeadPool}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    EngineConfig cfg = NullIoLoop(c.spec);
    cfg.pool_debug = false;
    Engine& e = Make(cfg);
    ASSERT_TRUE(e.Start().ok());
    ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx > 200'000; }));
    ASSERT_TRUE(e.Stop().ok());
    EXPECT_TRUE(e.final_audit().ok) << e.final_audit().message;
    const Totals t = Sum(e.Snapshot());
    const pool::CoreCountersSnapshot p = e.Snapshot().workers.at(0).pool;
    EXPECT_EQ(p.allocs, t.rx);
    EXPECT_EQ(p.frees, t.rx);
    const auto& top = p.layer[static_cast<int>(c.layers.front())];
    EXPECT_EQ(top.alloc_hits + top.alloc_misses, t.rx);
    EXPECT_GT(top.alloc_hits, t.rx / 2);  // the per-core layer serves most of them
    size_t first_pair = 0;
    if (c.layers.front() == Layer::kLcache) {
      // A cache counts each object it kept (free_hits: every single-object put here) and
      // again when a flush passes it below (free_misses); its refills take size + the part of
      // the request it lacked from below, of which only that part is its alloc_misses.
      EXPECT_EQ(top.free_hits, t.rx);
      EXPECT_GT(top.bulk, 0u);
      const auto& below = p.layer[static_cast<int>(c.layers[1])];
      EXPECT_GE(below.alloc_hits + below.alloc_misses, top.alloc_misses);
      EXPECT_EQ(below.free_hits + below.free_misses, top.free_misses);
      EXPECT_LT(below.alloc_hits + below.alloc_misses, t.rx / 2);  // the cache serves most
      first_pair = 1;
    } else {
      EXPECT_EQ(top.free_hits + top.free_misses, t.rx);
    }
    for (size_t i = first_pair; i + 1 < c.layers.size(); ++i) {
      const auto& up = p.layer[static_cast<int>(c.layers[i])];
      const auto& down = p.layer[static_cast<int>(c.layers[i + 1])];
      EXPECT_EQ(down.alloc_hits + down.alloc_misses, up.alloc_misses);
      EXPECT_EQ(down.free_hits + down.free_misses, up.free_misses);
    }
    EXPECT_EQ(p.layer[static_cast<int>(c.layers.back())].alloc_misses, p.store_allocs);
    engine_.reset();
  }
}

// net_ring keeps what its rings hold when the port closes: a ring port the worker transmits
// into but nobody reads fills up, and the exact audit at stop still finds every mbuf.
TEST_F(DataplaneTest, NetRingRingsAreDrainedForTheExactAudit) {
  const std::string src = Vdev("net_null"), ring = Vdev("net_ring");
  Engine& e =
      Make(Config(ForwardingMode::kIo, {{src, ring, ""}, {ring, src, ""}}, {{1, {{src, 0}}}}));
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).drops[kDropTxFull] > 0; }));
  ASSERT_TRUE(e.Stop().ok());
  const AuditReport& a = e.final_audit();
  EXPECT_TRUE(a.ok) << a.message;
  EXPECT_EQ(a.available, a.populated) << a.message;
  EXPECT_NE(a.message.find("taken back from net_ring rings"), std::string::npos) << a.message;
  const Totals t = Sum(e.Snapshot());
  EXPECT_EQ(t.rx, t.tx + t.dropped);
}

// Default worker assignment (every non-main lcore) with two RX queues per port: both workers
// forward, each on its own TX queue of every port.
TEST_F(DataplaneTest, TwoWorkersTwoQueuesDefaultAssignment) {
  const std::string a = Vdev("net_null"), b = Vdev("net_null");
  EngineConfig c = Config(ForwardingMode::kIo, {{a, b, ""}, {b, a, ""}}, {}, "recycle+magazine");
  c.rx_queues = 2;
  Engine& e = Make(c);
  ASSERT_EQ(e.WorkerLcores(), (std::vector<unsigned>{1, 2}));
  for (const PortInfo& p : e.Ports()) {
    EXPECT_EQ(p.rx_queues, 2);
    EXPECT_EQ(p.tx_queues, 2);
    EXPECT_FALSE(p.tx_shared);
  }
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] {
    const EngineSnapshot s = e.Snapshot();
    return s.workers[0].tx_packets > 100'000 && s.workers[1].tx_packets > 100'000;
  }));
  ExpectExactAudit();
  const EngineSnapshot s = e.Snapshot();
  EXPECT_EQ(s.workers[0].rx.size() + s.workers[1].rx.size(), 4u);
  const Totals t = Sum(s);
  EXPECT_EQ(t.rx, t.tx + t.dropped);
}

// ---------------------------------------------------------------------------------------------
// net_ring: exact in = out + drops, with TX back-pressure.

TEST_F(DataplaneTest, RingInEqualsOutPlusDrops) {
  rte_ring *arx, *atx, *brx, *btx;
  const std::string a = RingPort(&arx, &atx);
  const std::string b = RingPort(&brx, &btx, 512);  // small TX ring, not drained: tx_full
  Engine& e = Make(Config(ForwardingMode::kIo, {{a, b, ""}, {b, a, ""}}, {{1, {{a, 0}}}}));
  ASSERT_TRUE(e.Start().ok());
  constexpr uint32_t kN = 3000;
  std::vector<Frame> frames;
  for (uint32_t i = 0; i < kN; ++i) frames.push_back(UdpFrame(0x0a000001, 0x0a000002 + i, 64));
  Inject(arx, frames);
  // Wait on what the worker counts last (a burst's TX and drops come after its RX).
  ASSERT_TRUE(WaitFor([&] {
    const Totals now = Sum(e.Snapshot());
    return now.tx + now.dropped == kN;
  }));
  // Where the buffers are (forward.cc, "Where every buffer is"; the worker parked by the
  // audit): the 511 sent sit in b's TX ring; the test allocated all kN (the other threads'),
  // and they came in through a's RX, which allocated none of them (minus kN there).
  const AuditReport running = e.Audit();
  EXPECT_TRUE(running.ok) << running.message;
  ASSERT_EQ(running.places.ports.size(), 2u);
  EXPECT_EQ(running.places.ports[0].rx_ring, -static_cast<int64_t>(kN));
  EXPECT_EQ(running.places.ports[1].tx_ring, 511);
  EXPECT_EQ(running.places.cores.at(0).in_hands, 0);
  EXPECT_EQ(running.places.other_threads, kN);
  EXPECT_EQ(running.places.total, 511);
  const Totals t = Sum(e.Snapshot());
  const std::vector<Frame> out = Drain(btx);
  EXPECT_EQ(t.rx, kN);
  EXPECT_EQ(out.size(), t.tx);
  EXPECT_EQ(kN, out.size() + t.drops[kDropTxFull]);
  EXPECT_EQ(t.dropped, t.drops[kDropTxFull]);
  EXPECT_GT(t.drops[kDropTxFull], 0u);
  EXPECT_EQ(out.size(), 511u);  // a ring of 512 holds 511
  // io forwards frames unchanged, in order.
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i].bytes, frames[i].bytes) << i;
  ExpectExactAudit();
}

// Busy cycles: idle polls add nothing; the polls that received packets count exactly those
// packets and a positive number of TSC cycles, never more than the time that passed.
TEST_F(DataplaneTest, BusyCyclesCountOnlyPollsThatReceived) {
  rte_ring *arx, *atx, *brx, *btx;
  const std::string a = RingPort(&arx, &atx);
  const std::string b = RingPort(&brx, &btx);
  Engine& e = Make(Config(ForwardingMode::kIo, {{a, b, ""}, {b, a, ""}}, {{1, {{a, 0}}}}));
  const uint64_t tsc_start = rte_get_tsc_cycles();
  ASSERT_TRUE(e.Start().ok());
  EXPECT_EQ(e.Snapshot().tsc_hz, rte_get_tsc_hz());
  ASSERT_TRUE(WaitFor([&] { return e.Snapshot().workers[0].polls > 10'000; }));
  WorkerSnapshot idle = e.Snapshot().workers[0];
  EXPECT_EQ(idle.busy_cycles, 0u);
  EXPECT_EQ(idle.busy_packets, 0u);
  EXPECT_EQ(idle.busy_polls, 0u);

  constexpr uint32_t kN = 2000;
  std::vector<Frame> frames;
  for (uint32_t i = 0; i < kN; ++i) frames.push_back(UdpFrame(0x0a000001, 0x0a000002 + i, 64));
  Inject(arx, frames);
  // (busy_packets is added after forwarding, rx_packets before: wait for the later one)
  ASSERT_TRUE(WaitFor([&] { return e.Snapshot().workers[0].busy_packets >= kN; }));
  const WorkerSnapshot busy = e.Snapshot().workers[0];
  EXPECT_EQ(busy.rx_packets, kN);
  const uint64_t tsc_busy = rte_get_tsc_cycles();
  EXPECT_EQ(busy.busy_packets, kN);  // every received packet, each once
  EXPECT_GT(busy.busy_polls, 0u);
  EXPECT_LE(busy.busy_polls, kN);
  EXPECT_GT(busy.busy_cycles, 0u);
  EXPECT_LT(busy.busy_cycles, tsc_busy - tsc_start);  // busy time is part of the time passed
  EXPECT_GT(static_cast<double>(busy.busy_cycles) / busy.busy_packets, 1.0);

  // Idle again: polls go on, the busy counters stand still.
  ASSERT_TRUE(WaitFor([&] { return e.Snapshot().workers[0].polls > busy.polls + 10'000; }));
  const WorkerSnapshot after = e.Snapshot().workers[0];
  EXPECT_EQ(after.busy_cycles, busy.busy_cycles);
  EXPECT_EQ(after.busy_packets, busy.busy_packets);
  Drain(btx);
  ExpectExactAudit();
}

uint16_t RawSum(const uint8_t* p, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i + 1 < n; i += 2) s += (uint32_t{p[i]} << 8) | p[i + 1];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

// L3DecrementTtl (l3_packet.h: RFC 1624 folded into one add and a conditional subtract) against
// a full recomputation, for every checksum a valid header can carry (the identification field
// takes every value, so the header sum does) and TTLs from 2 to 255; and L3Check's
// verdict on each header before and after. No EAL: the functions touch only the bytes.
TEST(L3Packet, TtlChecksumUpdateEqualsFullRecomputationForEveryChecksum) {
  uint8_t f[34] = {};
  f[12] = 0x08;
  f[14] = 0x45;
  f[17] = 20;  // total length 20
  f[23] = 17;  // UDP
  f[30] = 10;  // destination 10.0.0.1
  f[33] = 1;
  uint64_t mismatches = 0;
  for (int ttl : {2, 3, 17, 64, 128, 200, 255}) {  // (the update does not depend on the TTL)
    for (uint32_t id = 0; id <= 0xffff; ++id) {
      f[18] = static_cast<uint8_t>(id >> 8);
      f[19] = static_cast<uint8_t>(id);
      f[22] = static_cast<uint8_t>(ttl);
      f[24] = f[25] = 0;
      const uint16_t c = static_cast<uint16_t>(~RawSum(f + 14, 20));
      f[24] = static_cast<uint8_t>(c >> 8);
      f[25] = static_cast<uint8_t>(c);
      if (L3Check(f, sizeof(f)) != kL3Route) ++mismatches;
      L3DecrementTtl(reinterpret_cast<rte_ipv4_hdr*>(f + 14));
      const uint16_t got = static_cast<uint16_t>(f[24] << 8 | f[25]);
      f[24] = f[25] = 0;
      const uint16_t want = static_cast<uint16_t>(~RawSum(f + 14, 20));
      f[24] = static_cast<uint8_t>(got >> 8);
      f[25] = static_cast<uint8_t>(got);
      if (got != want || f[22] != ttl - 1) ++mismatches;
      if (L3Check(f, sizeof(f)) != (ttl == 2 ? kDropTtlExpired : kL3Route)) ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

MacAddr MacAt(const std::vector<uint8_t>& b, size_t off) {
  MacAddr m;
  std::copy(b.begin() + off, b.begin() + off + 6, m.begin());
  return m;
}

uint32_t Ip(int a, int b, int c, int d) {
  return (uint32_t(a) << 24) | (uint32_t(b) << 16) | (uint32_t(c) << 8) | uint32_t(d);
}

// mac mode: src MAC = the output port's, dst MAC = the configured dst_mac of that port.
TEST_F(DataplaneTest, MacModeRewritesAddresses) {
  rte_ring *arx, *atx, *brx, *btx;
  const std::string a = RingPort(&arx, &atx);
  const std::string b = RingPort(&brx, &btx);
  Engine& e =
      Make(Config(ForwardingMode::kMac, {{a, b, "02:00:00:00:00:aa"}, {b, a, "02:00:00:00:00:bb"}},
                  {{1, {{a, 0}, {b, 0}}}}));
  MacAddr mac_b{};
  for (const PortInfo& p : e.Ports()) {
    if (p.name == b) mac_b = p.mac;
  }
  ASSERT_TRUE(e.Start().ok());
  std::vector<Frame> frames;
  for (int i = 0; i < 50; ++i) frames.push_back(UdpFrame(Ip(1, 2, 3, 4), Ip(5, 6, 7, i), 64));
  Inject(arx, frames);
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx == frames.size(); }));
  const std::vector<Frame> out = Drain(btx);
  ASSERT_EQ(out.size(), frames.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(MacAt(out[i].bytes, 0), (MacAddr{0x02, 0, 0, 0, 0, 0xbb}));
    EXPECT_EQ(MacAt(out[i].bytes, 6), mac_b);
    EXPECT_TRUE(
        std::equal(out[i].bytes.begin() + 12, out[i].bytes.end(), frames[i].bytes.begin() + 12));
  }
  EXPECT_TRUE(Drain(atx).empty());
  ExpectExactAudit();
}

// ---------------------------------------------------------------------------------------------
// l3 through net_pcap: output pcaps checked packet by packet; bad packets in the right counter;
// each output port's tx packets and bytes equal what its pcap holds. Burst 32 (one chunk of
// ForwardL3's 64) and 256 (several chunks per burst).

class L3PcapTest : public DataplaneTest, public ::testing::WithParamInterface<uint16_t> {};

TEST_P(L3PcapTest, OutputAndDropReasons) {
  // Input: one frame per case, each tagged by its UDP source port (= index).
  struct Case {
    Frame frame;
    int out = -1;      // 1 or 2: expected output port; -1: dropped
    int reason = -1;   // drop reason
    MacAddr mac = {};  // expected next-hop MAC
  };
  const MacAddr m1 = {0x02, 0, 0, 0, 0xaa, 0x01}, m2 = {0x02, 0, 0, 0, 0xaa, 0x02},
                m3 = {0x02, 0, 0, 0, 0xaa, 0x03};
  std::vector<Case> cases;
  auto add = [&](Frame f, int out, int reason, MacAddr mac = {}) {
    const uint16_t tag = static_cast<uint16_t>(2000 + cases.size());
    f.bytes[34] = static_cast<uint8_t>(tag >> 8);  // UDP source port
    f.bytes[35] = static_cast<uint8_t>(tag);
    cases.push_back({std::move(f), out, reason, mac});
  };
  for (int rep = 0; rep < 20; ++rep) {
    const uint8_t ttl = static_cast<uint8_t>(2 + rep * 12);  // 2 .. 230: checksum carries
    add(UdpFrame(Ip(172, 16, 0, 1), Ip(10, 1, 2, 3 + rep), ttl), 1, -1, m1);  // /8
    add(UdpFrame(Ip(172, 16, 0, 1), Ip(10, 2, 0, 9 + rep), ttl), 2, -1, m2);  // /16
    add(UdpFrame(Ip(172, 16, 0, 1), Ip(10, 2, 3, 4), ttl, 128), 1, -1, m3);   // /24 -> p1
    add(UdpFrame(Ip(172, 16, 0, 1), Ip(10, 2, 3, 200), ttl), 2, -1, m2);      // /25 hole
    add(UdpFrame(Ip(172, 16, 0, 1), Ip(192, 0, 2, 1), 64), -1, kDropNoRoute);
    add(UdpFrame(Ip(172, 16, 0, 1), Ip(10, 1, 1, 1), 1), -1, kDropTtlExpired);
    add(UdpFrame(Ip(172, 16, 0, 1), Ip(10, 1, 1, 1), 0), -1, kDropTtlExpired);
    Frame arp = UdpFrame(0, 0, 64);
    arp.bytes[12] = 0x08;
    arp.bytes[13] = 0x06;
    add(arp, -1, kDropNotIpv4);
    Frame badsum = UdpFrame(Ip(172, 16, 0, 1), Ip(10, 1, 1, 1), 64);
    badsum.bytes[24] ^= 0x5a;
    add(badsum, -1, kDropBadHeader);
    Frame v6 = UdpFrame(Ip(172, 16, 0, 1), Ip(10, 1, 1, 1), 64);
    v6.bytes[14] = 0x65;  // version 6 in an IPv4 ethertype
    add(v6, -1, kDropBadHeader);
    Frame shortlen = UdpFrame(Ip(172, 16, 0, 1), Ip(10, 1, 1, 1), 64);
    shortlen.bytes[16] = 0x10;  // total length 4096 > frame
    add(shortlen, -1, kDropBadHeader);
  }
  // A run to one port with drops inside it (ForwardL3's one-port path: its bytes are the
  // chunk's minus the dropped ones).
  for (int rep = 0; rep < 70; ++rep) {
    if (rep % 7 == 3) {
      Frame badsum =
          UdpFrame(Ip(172, 16, 0, 1), Ip(10, 1, 1, 1), 64, static_cast<uint16_t>(64 + rep));
      badsum.bytes[24] ^= 0x33;
      add(badsum, -1, kDropBadHeader);
    } else if (rep % 7 == 5) {
      add(UdpFrame(Ip(172, 16, 0, 1), Ip(192, 0, 2, 7), 64, static_cast<uint16_t>(100 + rep)), -1,
          kDropNoRoute);
    } else {
      add(UdpFrame(Ip(172, 16, 0, 1), Ip(10, 1, 9, rep), 64, static_cast<uint16_t>(70 + rep)), 1,
          -1, m1);
    }
  }
  const auto in = (Dir() / "in.pcap").string(), o1 = (Dir() / "out1.pcap").string(),
             o2 = (Dir() / "out2.pcap").string();
  std::vector<Frame> frames;
  for (const Case& c : cases) frames.push_back(c.frame);
  ASSERT_TRUE(WritePcap(in, frames).ok());
  const std::string src = Vdev("net_pcap", "rx_pcap=" + in);
  const std::string p1 = Vdev("net_pcap", "tx_pcap=" + o1);
  const std::string p2 = Vdev("net_pcap", "tx_pcap=" + o2);
  EngineConfig c = Config(ForwardingMode::kL3, {{src, p1, ""}, {p1, src, ""}, {p2, src, ""}},
                          {{1, {{src, 0}}}}, "recycle+magazine");
  c.burst = GetParam();
  c.routes = {{"10.0.0.0/8", p1, "02:00:00:00:aa:01"},
              {"10.2.0.0/16", p2, "02:00:00:00:aa:02"},
              {"10.2.3.0/24", p1, "02:00:00:00:aa:03"},
              {"10.2.3.128/25", p2, "02:00:00:00:aa:02"}};
  Engine& e = Make(c);
  const uint16_t ids[3] = {0, PortId(p1), PortId(p2)};
  std::map<uint16_t, MacAddr> port_mac;
  for (const PortInfo& p : e.Ports()) {
    port_mac[p.id] = p.mac;
  }
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).rx == cases.size(); }));
  ASSERT_TRUE(WaitFor([&] {
    const Totals t = Sum(e.Snapshot());
    return t.tx + t.dropped == cases.size();
  }));
  ExpectExactAudit();  // closes the ports: the pcap files are complete

  const Totals t = Sum(e.Snapshot());
  int expect_drops[kNumDropReasons] = {};
  std::vector<const Case*> want[3];
  for (const Case& k : cases) {
    if (k.out < 0) {
      expect_drops[k.reason]++;
    } else {
      want[k.out].push_back(&k);
    }
  }
  for (int r = 0; r < kNumDropReasons; ++r) {
    EXPECT_EQ(t.drops[r], static_cast<uint64_t>(expect_drops[r])) << DropReasonName(r);
  }
  const std::string files[3] = {"", o1, o2};
  for (int port = 1; port <= 2; ++port) {
    auto got = ReadPcap(files[port]);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), want[port].size()) << "port " << port;
    uint64_t got_bytes = 0;
    for (const Frame& f : *got) got_bytes += f.bytes.size();
    const PortCounters pc = e.Snapshot().workers.at(0).ports[ids[port]];
    EXPECT_EQ(pc.tx_packets, got->size()) << "port " << port;
    EXPECT_EQ(pc.tx_bytes, got_bytes) << "port " << port;
    for (size_t i = 0; i < got->size(); ++i) {
      const std::vector<uint8_t>& g = (*got)[i].bytes;
      const std::vector<uint8_t>& w = want[port][i]->frame.bytes;
      ASSERT_EQ(g.size(), w.size());
      EXPECT_EQ(MacAt(g, 0), want[port][i]->mac) << "dst MAC, " << i;
      EXPECT_EQ(MacAt(g, 6), port_mac[ids[port]]) << "src MAC";
      EXPECT_EQ(g[22], w[22] - 1) << "TTL";
      EXPECT_EQ(RawSum(g.data() + 14, 20), 0xffff) << "IPv4 header checksum";
      // Everything but MACs, TTL and checksum is unchanged.
      for (size_t j = 12; j < g.size(); ++j) {
        if (j == 22 || j == 24 || j == 25) continue;
        ASSERT_EQ(g[j], w[j]) << "byte " << j << " of frame " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Bursts, L3PcapTest, ::testing::Values(uint16_t{32}, uint16_t{256}));

// 0.0.0.0/0 from the configuration (rte_lpm has no depth 0: the engine's default hop): what no
// other prefix matches goes to the default next hop; once it is deleted the same traffic is
// no_route.
TEST_F(DataplaneTest, DefaultRouteForwardsWhatNoPrefixMatches) {
  rte_ring *irx, *itx, *arx, *atx, *brx, *btx;
  const std::string in = RingPort(&irx, &itx);
  const std::string a = RingPort(&arx, &atx);
  const std::string b = RingPort(&brx, &btx);
  EngineConfig c =
      Config(ForwardingMode::kL3, {{in, a, ""}, {a, in, ""}, {b, in, ""}}, {{1, {{in, 0}}}});
  c.routes = {{"10.0.0.0/8", a, "02:00:00:00:00:0a"}, {"0.0.0.0/0", b, "02:00:00:00:00:0b"}};
  Engine& e = Make(c);
  EXPECT_EQ(e.Routes().size(), 2u);
  std::vector<Frame> batch;
  for (int i = 0; i < 50; ++i) batch.push_back(UdpFrame(Ip(1, 1, 1, 1), Ip(10, 9, 9, i), 64));
  for (int i = 0; i < 50; ++i) batch.push_back(UdpFrame(Ip(1, 1, 1, 1), Ip(198, 51, 100, i), 64));
  ASSERT_TRUE(e.Start().ok());
  Inject(irx, batch);
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx == 100; }));
  EXPECT_EQ(Drain(atx).size(), 50u);
  auto via_default = Drain(btx);
  ASSERT_EQ(via_default.size(), 50u);
  EXPECT_EQ(via_default[0].bytes[5], 0x0b);
  ASSERT_TRUE(e.DeleteRoute(Ipv4Prefix{0, 0}).ok());
  Inject(irx, batch);
  ASSERT_TRUE(WaitFor([&] {
    const Totals t = Sum(e.Snapshot());
    return t.tx + t.dropped == 200;
  }));
  EXPECT_EQ(Drain(atx).size(), 50u);
  EXPECT_TRUE(Drain(btx).empty());
  EXPECT_EQ(Sum(e.Snapshot()).drops[kDropNoRoute], 50u);
  // Bytes per output port: 100 frames to a (half of them in bursts with no_route drops), 50 to
  // b (in bursts shared with a).
  const WorkerSnapshot w = e.Snapshot().workers.at(0);
  EXPECT_EQ(w.ports[PortId(a)].tx_bytes, 100 * batch[0].bytes.size());
  EXPECT_EQ(w.ports[PortId(b)].tx_bytes, 50 * batch[0].bytes.size());
  ExpectExactAudit();
}

// Routes change while traffic flows (net_ring, exact per packet).
TEST_F(DataplaneTest, RoutesChangeWhileForwarding) {
  rte_ring *irx, *itx, *arx, *atx, *brx, *btx;
  const std::string in = RingPort(&irx, &itx);
  const std::string a = RingPort(&arx, &atx);
  const std::string b = RingPort(&brx, &btx);
  EngineConfig c =
      Config(ForwardingMode::kL3, {{in, a, ""}, {a, in, ""}, {b, in, ""}}, {{1, {{in, 0}}}});
  c.routes = {{"10.0.0.0/8", a, "02:00:00:00:00:0a"}};
  Engine& e = Make(c);
  std::vector<Frame> batch;
  for (int i = 0; i < 100; ++i) batch.push_back(UdpFrame(Ip(1, 1, 1, 1), Ip(10, 9, 9, i), 64));
  ASSERT_TRUE(e.Start().ok());
  uint64_t sent = 0;
  auto send = [&] {
    Inject(irx, batch);
    sent += batch.size();
    ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx == sent; }));
  };
  send();
  EXPECT_EQ(Drain(atx).size(), 100u);
  Route r;
  auto prefix = net::ParseIpv4Prefix("10.9.0.0/16");
  ASSERT_TRUE(prefix.ok());
  r.prefix = *prefix;
  r.port = PortId(b);
  r.dst_mac = {0x02, 0, 0, 0, 0, 0x0b};
  ASSERT_TRUE(e.AddRoute(r).ok());
  EXPECT_EQ(e.Routes().size(), 2u);
  send();
  auto via_b = Drain(btx);
  ASSERT_EQ(via_b.size(), 100u);
  EXPECT_EQ(via_b[0].bytes[5], 0x0b);
  EXPECT_TRUE(Drain(atx).empty());
  ASSERT_TRUE(e.DeleteRoute(r.prefix).ok());
  send();
  EXPECT_EQ(Drain(atx).size(), 100u);
  EXPECT_TRUE(Drain(btx).empty());
  EXPECT_EQ(e.DeleteRoute(r.prefix).code(), absl::StatusCode::kNotFound);
  ExpectExactAudit();
}

// Next-hop ids are reference-counted and reused (issue 31 item 4): 100,000 add/delete cycles of
// 10.9.0.0/16 over 100,000 distinct next-hop MACs, more than the 65,535 ids there are, while a
// thread sends frames to 10.9.9.x through the worker all along. No cycle is refused, the live
// next-hop count comes back to where it was, and every frame that came out carries a next hop's
// complete address: out of b one of the cycle's MACs (02:10:xx:xx:xx:01), out of a the /8's
// (an id reused before a worker was done with it would show a torn or foreign MAC). Afterwards
// a new route forwards to exactly its MAC.
TEST_F(DataplaneTest, NextHopIdsAreReusedOverAHundredThousandDistinctMacs) {
  rte_ring *irx, *itx, *arx, *atx, *brx, *btx;
  const std::string in = RingPort(&irx, &itx);
  const std::string a = RingPort(&arx, &atx);
  const std::string b = RingPort(&brx, &btx);
  EngineConfig c =
      Config(ForwardingMode::kL3, {{in, a, ""}, {a, in, ""}, {b, in, ""}}, {{1, {{in, 0}}}});
  c.routes = {{"10.0.0.0/8", a, "02:00:00:00:00:0a"}};
  Engine& e = Make(c);
  ASSERT_TRUE(e.Start().ok());
  const size_t hops_at_start = e.NextHops();
  EXPECT_EQ(hops_at_start, 1u);
  const uint16_t pb = PortId(b);
  MacAddr b_mac{};
  for (const PortInfo& p : e.Ports()) {
    if (p.id == pb) b_mac = p.mac;
  }

  std::atomic<bool> done{false};
  std::atomic<uint64_t> bad{0}, out_a{0}, out_b{0};
  std::string first_bad;
  std::thread traffic([&] {
    std::vector<Frame> batch;
    for (int i = 0; i < 32; ++i) batch.push_back(UdpFrame(Ip(1, 1, 1, 1), Ip(10, 9, 9, i), 64));
    uint64_t sent = 0;
    while (!done.load()) {
      Inject(irx, batch);
      sent += batch.size();
      WaitFor([&] {
        const Totals t = Sum(e.Snapshot());
        return t.tx + t.dropped >= sent;
      });
      for (const Frame& f : Drain(atx)) {
        ++out_a;
        if (MacAt(f.bytes, 0) != MacAddr{0x02, 0, 0, 0, 0, 0x0a}) ++bad;
      }
      for (const Frame& f : Drain(btx)) {
        ++out_b;
        const MacAddr d = MacAt(f.bytes, 0);
        if (d[0] != 0x02 || d[1] != 0x10 || d[5] != 0x01 || MacAt(f.bytes, 6) != b_mac) {
          if (bad++ == 0) first_bad = net::FormatMac(d);
        }
      }
    }
  });
  Route r;
  r.prefix = net::ParseIpv4Prefix("10.9.0.0/16").value();
  r.port = pb;
  std::set<uint32_t> ids;
  int refused = 0;
  std::string why;
  for (uint32_t i = 0; i < 100'000; ++i) {
    r.dst_mac = {0x02, 0x10, uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i), 0x01};
    absl::StatusOr<uint32_t> id = e.AddRoute(r);
    if (!id.ok()) {
      if (refused++ == 0) why = absl::StrCat("cycle ", i, ": ", id.status().message());
      continue;
    }
    ids.insert(*id);
    ASSERT_TRUE(e.DeleteRoute(r.prefix).ok());
  }
  done.store(true);
  traffic.join();
  EXPECT_EQ(refused, 0) << why;
  EXPECT_EQ(e.NextHops(), hops_at_start);
  EXPECT_LT(*ids.rbegin(), 1u << 16);
  EXPECT_EQ(bad.load(), 0u) << "first bad dst " << first_bad;
  EXPECT_GT(out_a.load() + out_b.load(), 0u);
  std::printf("100000 cycles: %zu distinct ids (largest %u), %lu frames out of a, %lu out of b\n",
              ids.size(), *ids.rbegin(), static_cast<unsigned long>(out_a.load()),
              static_cast<unsigned long>(out_b.load()));

  // A route added afterwards forwards to exactly its MAC, from b's.
  r.dst_mac = {0x02, 0xab, 0xcd, 0xef, 0x12, 0x34};
  ASSERT_TRUE(e.AddRoute(r).ok());
  EXPECT_EQ(e.NextHops(), hops_at_start + 1);
  std::vector<Frame> batch;
  for (int i = 0; i < 100; ++i) batch.push_back(UdpFrame(Ip(1, 1, 1, 1), Ip(10, 9, 9, i), 64));
  const uint64_t before = Sum(e.Snapshot()).tx;
  Inject(irx, batch);
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx == before + 100; }));
  const std::vector<Frame> via_b = Drain(btx);
  ASSERT_EQ(via_b.size(), 100u);
  for (const Frame& f : via_b) {
    ASSERT_EQ(MacAt(f.bytes, 0), r.dst_mac);
    ASSERT_EQ(MacAt(f.bytes, 6), b_mac);
  }
  EXPECT_TRUE(Drain(atx).empty());
  ExpectExactAudit();
}

// ---------------------------------------------------------------------------------------------
// Every strategy forwards.

class StrategyTest : public DataplaneTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(StrategyTest, Forwards) {
  Engine& e = Make(NullIoLoop(GetParam()));
  EXPECT_EQ(e.strategy(), pool::StrategySpec::Parse(GetParam())->ToString());
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx > 200'000; }));
  const WorkerSnapshot w = e.Snapshot().workers.at(0);
  auto spec = pool::StrategySpec::Parse(GetParam());
  ASSERT_TRUE(spec.ok());
  for (int l = 0; l < pool::kNumLayers; ++l) {
    if (spec->Has(static_cast<pool::Layer>(l))) {
      // The top layer served allocations from its own state: it is really in the packet path.
      EXPECT_GT(w.pool.layer[l].alloc_hits, 0u) << pool::LayerName(static_cast<pool::Layer>(l));
      break;
    }
  }
  ExpectExactAudit();
  if (spec->layers == 0) {
    // Read after the stop: while the worker runs, a snapshot reads allocs before store_allocs
    // and a burst can land in between.
    const WorkerSnapshot stopped = e.Snapshot().workers.at(0);
    EXPECT_GT(stopped.pool.allocs, 0u);
    EXPECT_EQ(stopped.pool.store_allocs, stopped.pool.allocs);
  }
  const Totals t = Sum(e.Snapshot());
  EXPECT_EQ(t.rx, t.tx + t.dropped);
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, StrategyTest,
                         ::testing::Values("slab", "magazine", "headpool", "recycle", "lcache",
                                           "recycle+headpool", "recycle+magazine",
                                           "headpool+magazine", "lcache+magazine",
                                           "lcache+recycle+headpool+magazine,prefetch",
                                           "magazine:size=8",
                                           "recycle:limit=64+headpool:hot_list_len=16,prefetch"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n;
                           for (const char* p = i.param; *p; ++p) n += std::isalnum(*p) ? *p : '_';
                           return n;
                         });

// ---------------------------------------------------------------------------------------------
// 1,000 swaps while two workers forward: no buffer lost, exact audit after stop.

TEST_F(DataplaneTest, ThousandSwapsUnderTrafficLoseNothing) {
  const std::string a = Vdev("net_null"), b = Vdev("net_null");
  Engine& e = Make(Config(ForwardingMode::kIo, {{a, b, ""}, {b, a, ""}},
                          {{1, {{a, 0}}}, {2, {{b, 0}}}}, "magazine"));
  ASSERT_TRUE(e.Start().ok());
  // Every spec the buffer core can run (testing::AllSpecs: each layer subset, with and without
  // prefetch), round-robin: a layer added later is swapped through here without an edit.
  // The specs go to the engine as built, never as text.
  const std::vector<pool::StrategySpec> specs = pool::testing::AllSpecs();
  ASSERT_GE(specs.size(), 2u * (1u << pool::kNumLayers));
  uint64_t last_epoch = e.pool()->epoch();
  int ok = 0;
  for (int i = 0; i < 1000; ++i) {
    // A generous acknowledgement deadline: this machine's CPUs are shared, and a worker
    // that is descheduled for a while must not turn this test into a timing test.
    auto rep = e.SwapStrategy(specs[i % specs.size()], std::chrono::seconds(10));
    ASSERT_TRUE(rep.ok()) << rep.status();
    ASSERT_TRUE(rep->status.ok()) << rep->status;
    EXPECT_EQ(e.pool()->strategy(), specs[i % specs.size()]);
    EXPECT_EQ(rep->cores.size(), 2u);
    EXPECT_GT(rep->epoch, last_epoch);
    last_epoch = rep->epoch;
    ok += rep->status.ok() ? 1 : 0;
    if (i % 100 == 0) {
      // Traffic keeps flowing between swaps.
      const uint64_t before = Sum(e.Snapshot()).tx;
      ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx > before; }));
    }
  }
  EXPECT_EQ(ok, 1000);
  EXPECT_EQ(e.pool()->swaps_ok(), 1000u);
  EXPECT_EQ(e.strategy(), specs[999 % specs.size()].ToString());
  ExpectExactAudit();
  const Totals t = Sum(e.Snapshot());
  EXPECT_EQ(t.rx, t.tx + t.dropped);
}

TEST_F(DataplaneTest, BaselineRefusesSwapsWithReason) {
  EngineConfig c = NullIoLoop();
  c.pool_ops = PoolOps::kRingMpMc;
  Engine& e = Make(c);
  EXPECT_EQ(e.pool(), nullptr);
  EXPECT_FALSE(e.swappable());
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx > 100'000; }));
  auto rep = Swap(e, "magazine");
  EXPECT_EQ(rep.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(rep.status().message().find("ring_mp_mc"), absl::string_view::npos);
  // The one refusal text (common/pool_ops.h), the same from CheckSwappable.
  EXPECT_EQ(rep.status(), NativePoolSwapRefusal(PoolOpsName(PoolOps::kRingMpMc)));
  EXPECT_EQ(e.CheckSwappable(), rep.status());
  EXPECT_EQ(e.mempool_info().ops, PoolOps::kRingMpMc);
  EXPECT_EQ(e.Snapshot().pool_ops, PoolOps::kRingMpMc);
  // Pause/resume work without the pool's quiescence protocol too.
  ASSERT_TRUE(e.PauseWorker(1, std::chrono::seconds(10)).ok());
  EXPECT_TRUE(e.Snapshot().workers[0].paused);
  const uint64_t polls = Sum(e.Snapshot()).polls;
  ASSERT_TRUE(WaitParkedRounds(e, 1)) << "a parked worker acknowledges its rounds";
  EXPECT_EQ(Sum(e.Snapshot()).polls, polls);
  ASSERT_TRUE(e.ResumeWorker(1).ok());
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).polls > polls; }));
  ExpectExactAudit();
}

TEST_F(DataplaneTest, BadSwapSpecChangesNothing) {
  Engine& e = Make(NullIoLoop());
  ASSERT_TRUE(e.Start().ok());
  const uint64_t epoch = e.pool()->epoch();
  auto rep = Swap(e, "magazine+recycle");  // wrong order: refused where the text arrives
  EXPECT_EQ(rep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(e.pool()->epoch(), epoch);
  EXPECT_EQ(e.strategy(), "magazine");
  ExpectExactAudit();
}

// ---------------------------------------------------------------------------------------------
// Pause/resume: a paused worker polls nothing and holds no buffer in its layers.

TEST_F(DataplaneTest, PauseAndResumeWorker) {
  Engine& e = Make(NullIoLoop());
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx > 10'000; }));
  ASSERT_TRUE(e.PauseWorker(1, std::chrono::seconds(10)).ok());
  ASSERT_TRUE(WaitFor([&] { return e.Snapshot().workers[0].paused; }));
  const Totals p1 = Sum(e.Snapshot());
  ASSERT_TRUE(WaitParkedRounds(e, 1)) << "a parked worker acknowledges its rounds";
  const Totals p2 = Sum(e.Snapshot());
  EXPECT_EQ(p1.rx, p2.rx);
  EXPECT_EQ(p1.polls, p2.polls);
  const pool::LayerGauges g = e.Snapshot().workers[0].gauges;
  for (uint64_t v : g.objects) EXPECT_EQ(v, 0u);  // flushed to the store when it parked
  // While paused, a swap is done on the worker's behalf.
  auto rep = Swap(e, "headpool", std::chrono::seconds(10));
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(rep->status.ok());
  ASSERT_EQ(rep->cores.size(), 1u);
  EXPECT_TRUE(rep->cores[0].on_behalf);
  ASSERT_TRUE(e.ResumeWorker(1).ok());
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).rx > p2.rx; }));
  EXPECT_FALSE(e.Snapshot().workers[0].paused);
  // A second cycle behaves like the first (the worker really parks again).
  ASSERT_TRUE(e.PauseWorker(1, std::chrono::seconds(10)).ok());
  ASSERT_TRUE(WaitFor([&] { return e.Snapshot().workers[0].paused; }));
  const uint64_t polls = Sum(e.Snapshot()).polls;
  ASSERT_TRUE(WaitParkedRounds(e, 1)) << "a parked worker acknowledges its rounds";
  EXPECT_EQ(Sum(e.Snapshot()).polls, polls);
  ASSERT_TRUE(e.ResumeWorker(1).ok());
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).polls > polls; }));
  EXPECT_EQ(e.PauseWorker(7).code(), absl::StatusCode::kNotFound);
  ExpectExactAudit();
}

// Worker hooks (dataplane/dpdk/worker_hooks.h): given before Start, every loop pass calls them
// on the worker's own lcore, BeforePoll only while the worker runs; refused once started.
class CountingHooks final : public WorkerHooks {
 public:
  bool BeforeQuiescent(const WorkerView& w) override {
    Check(w);
    quiescent.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  bool BeforePoll(const WorkerView& w) override {
    Check(w);
    polls.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  std::atomic<uint64_t> quiescent{0}, polls{0}, elsewhere{0};

 private:
  void Check(const WorkerView& w) {
    if (rte_lcore_id() != w.lcore) elsewhere.fetch_add(1, std::memory_order_relaxed);
  }
};

TEST_F(DataplaneTest, WorkerHooksRunOnTheWorkerOnlyWhenGivenBeforeStart) {
  Engine& e = Make(NullIoLoop());
  auto owned = std::make_unique<CountingHooks>();
  CountingHooks& h = *owned;
  ASSERT_TRUE(e.SetWorkerHooks(std::move(owned)).ok());
  ASSERT_TRUE(e.Start().ok());
  EXPECT_EQ(e.SetWorkerHooks(std::make_unique<CountingHooks>()).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(WaitFor([&] { return h.polls.load() > 100 && Sum(e.Snapshot()).tx > 1000; }));
  ASSERT_TRUE(e.PauseWorker(1, std::chrono::seconds(10)).ok());
  const uint64_t polls = h.polls.load(), quiescent = h.quiescent.load();
  ASSERT_TRUE(WaitFor([&] { return h.quiescent.load() > quiescent + 100; }))
      << "a parked worker still passes its quiescent point";
  EXPECT_EQ(h.polls.load(), polls) << "BeforePoll on a parked worker";
  ASSERT_TRUE(e.ResumeWorker(1).ok());
  ASSERT_TRUE(WaitFor([&] { return h.polls.load() > polls; }));
  EXPECT_EQ(h.elsewhere.load(), 0u) << "a hook ran off its worker's lcore";
  ExpectExactAudit();
}

// ---------------------------------------------------------------------------------------------
// Pool exhaustion: packets held in a TX ring empty the pool; rx_nombuf counts; forwarding
// recovers when the buffers come back.

// DPDK's lcore cache playing the lcache layer (skbnfd's pools without the debug switch): swaps
// in and out of it under traffic resize and flush it through the adopt hook, and the counts
// stay exact: every core's allocs and frees are its packets, and nothing is lost.
TEST_F(DataplaneTest, HostedLcacheSwapsUnderTrafficKeepCountsExact) {
  const std::string a = Vdev("net_null"), b = Vdev("net_null");
  EngineConfig cfg = Config(ForwardingMode::kIo, {{a, b, ""}, {b, a, ""}},
                            {{1, {{a, 0}}}, {2, {{b, 0}}}}, "lcache:size=64+headpool");
  cfg.pool_debug = false;
  Engine& e = Make(cfg);
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] {
    const EngineSnapshot s = e.Snapshot();
    return s.workers.at(0).gauges.objects[static_cast<int>(pool::Layer::kLcache)] > 0;
  }));
  const char* specs[] = {"headpool",
                         "lcache:size=512+magazine",
                         "slab",
                         "lcache",
                         "lcache:size=32+recycle+headpool",
                         "lcache:size=64,prefetch",
                         "lcache:size=64+headpool"};
  for (int i = 0; i < 140; ++i) {
    auto rep = Swap(e, specs[i % 7], std::chrono::seconds(10));
    ASSERT_TRUE(rep.ok()) << rep.status();
    ASSERT_TRUE(rep->status.ok()) << rep->status;
    if (i % 20 == 0) {
      const uint64_t before = Sum(e.Snapshot()).tx;
      ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx > before + 10'000; }));
    }
  }
  ASSERT_TRUE(e.Stop().ok());
  EXPECT_TRUE(e.final_audit().ok) << e.final_audit().message;
  const EngineSnapshot snap = e.Snapshot();
  uint64_t allocs = 0, frees = 0;
  for (const WorkerSnapshot& w : snap.workers) {
    allocs += w.pool.allocs;
    frees += w.pool.frees;
    EXPECT_EQ(w.pool.allocs, w.rx_packets) << "lcore " << w.lcore;
  }
  const Totals t = Sum(snap);
  EXPECT_EQ(t.rx, t.tx + t.dropped);
  EXPECT_EQ(allocs, t.rx);
  EXPECT_EQ(frees, t.rx);
}

// skbnfd's ops keep each worker thread's slot (skbnf_mempool.cc, ThreadSlots): the inline hits
// of the cached slot read its kind on every call, so swaps between every top layer with a hit
// (and pauses, which the control thread acts through) keep the counts exact with the debug
// switch off (the production path): every core's allocs and frees are its packets, each
// layer's hits + misses what the layer above asked, and the exit audit is exact.
TEST_F(DataplaneTest, SwapsBetweenInlineHitsUnderTrafficKeepCountsExact) {
  const std::string a = Vdev("net_null"), b = Vdev("net_null");
  EngineConfig cfg = Config(ForwardingMode::kIo, {{a, b, ""}, {b, a, ""}},
                            {{1, {{a, 0}}}, {2, {{b, 0}}}}, "headpool");
  cfg.pool_debug = false;
  Engine& e = Make(cfg);
  ASSERT_TRUE(e.Start().ok());
  const char* specs[] = {"magazine",
                         "recycle+headpool",
                         "headpool:hot_list_len=16",
                         "recycle+magazine",
                         "headpool+magazine",
                         "magazine:size=8,prefetch",
                         "headpool,prefetch",
                         "slab",
                         "headpool"};
  for (int i = 0; i < 90; ++i) {
    if (i % 30 == 15) {
      ASSERT_TRUE(e.PauseWorker(1, std::chrono::seconds(10)).ok());
      auto rep = Swap(e, specs[i % 9], std::chrono::seconds(10));  // on its behalf
      ASSERT_TRUE(rep.ok()) << rep.status();
      ASSERT_TRUE(rep->status.ok()) << rep->status;
      ASSERT_TRUE(e.ResumeWorker(1, std::chrono::seconds(10)).ok());
    } else {
      auto rep = Swap(e, specs[i % 9], std::chrono::seconds(10));
      ASSERT_TRUE(rep.ok()) << rep.status();
      ASSERT_TRUE(rep->status.ok()) << rep->status;
    }
    if (i % 10 == 0) {
      const uint64_t before = Sum(e.Snapshot()).tx;
      ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx > before + 10'000; }));
    }
  }
  ASSERT_TRUE(e.Stop().ok());
  EXPECT_TRUE(e.final_audit().ok) << e.final_audit().message;
  EXPECT_TRUE(e.final_audit().exact);
  const EngineSnapshot snap = e.Snapshot();
  uint64_t allocs = 0, frees = 0;
  for (const WorkerSnapshot& w : snap.workers) {
    allocs += w.pool.allocs;
    frees += w.pool.frees;
    EXPECT_EQ(w.pool.allocs, w.rx_packets) << "lcore " << w.lcore;
    // Each layer's traffic: hits + misses never exceed what the core handed out / took back.
    for (int l = 0; l < pool::kNumLayers; ++l) {
      EXPECT_LE(w.pool.layer[l].alloc_hits + w.pool.layer[l].alloc_misses, w.pool.allocs);
    }
  }
  const Totals t = Sum(snap);
  EXPECT_EQ(t.rx, t.tx + t.dropped);
  EXPECT_EQ(allocs, t.rx);
  EXPECT_EQ(frees, t.rx);
}

// skbnfd's ops remember, per worker thread, that its slot runs the head pool's or the magazine
// layer's single-object hit (skbnf_mempool.cc ThreadSlots: the free then skips the slot's kind)
// and drop that in the pool's adopt hook before every change of the kind. Were it kept across
// a swap to `recycle+headpool` (`recycle+magazine`), the worker's frees would go straight onto
// the head pool's list (the loaded magazine), past the recycle layer on top (a layer out of the
// chain refuses them: its list has length 0, it has no magazine loaded). So: after the swap the
// top layer sees every free of the core (its hits plus its misses equal the core's frees).
// Checked for a swap the worker adopts itself and for one control makes on behalf of the
// parked worker.
TEST_F(DataplaneTest, RememberedSingleObjectHitIsDroppedAtEverySwap) {
  constexpr int kRc = static_cast<int>(pool::Layer::kRecycle);
  struct Case {
    const char* from;
    pool::Layer layer;
    const char* to;
  };
  // One engine per layer: a hit remembered (wrongly) from the other layer's case would hide
  // this one's, since the free tries only the first remembered hit.
  for (const Case& c : {Case{"headpool", pool::Layer::kHeadPool, "recycle+headpool"},
                        Case{"magazine", pool::Layer::kMagazine, "recycle+magazine"}}) {
    EngineConfig cfg = NullIoLoop(c.from);
    cfg.pool_debug = false;
    Engine& e = Make(cfg);
    ASSERT_TRUE(e.Start().ok());
    const auto traffic = [&] {
      const uint64_t before = Sum(e.Snapshot()).tx;
      return WaitFor([&] { return Sum(e.Snapshot()).tx > before + 20'000; });
    };
    const auto hits = [&] {
      return e.Snapshot().workers.at(0).pool.layer[static_cast<int>(c.layer)].free_hits;
    };
    for (const bool on_behalf : {false, true}) {
      SCOPED_TRACE(
          std::string(c.from) + " -> " + c.to +
          (on_behalf ? ", made on behalf of the parked worker" : ", adopted by the worker"));
      auto rep = Swap(e, c.from, std::chrono::seconds(10));
      ASSERT_TRUE(rep.ok() && rep->status.ok());
      const uint64_t hits0 = hits();
      ASSERT_TRUE(traffic());  // the worker's frees take the remembered hit
      ASSERT_GT(hits(), hits0);
      if (on_behalf) {
        ASSERT_TRUE(e.PauseWorker(1, std::chrono::seconds(10)).ok());
      }
      rep = Swap(e, c.to, std::chrono::seconds(10));
      ASSERT_TRUE(rep.ok() && rep->status.ok());
      if (on_behalf) {
        ASSERT_TRUE(e.ResumeWorker(1, std::chrono::seconds(10)).ok());
      }
      ASSERT_TRUE(traffic());  // (the first poll after the swap adopts it)
      const WorkerSnapshot w0 = e.Snapshot().workers.at(0);
      ASSERT_TRUE(traffic());
      const WorkerSnapshot w1 = e.Snapshot().workers.at(0);
      const uint64_t frees = w1.pool.frees - w0.pool.frees;
      const uint64_t top_saw = (w1.pool.layer[kRc].free_hits + w1.pool.layer[kRc].free_misses) -
                               (w0.pool.layer[kRc].free_hits + w0.pool.layer[kRc].free_misses);
      ASSERT_GT(frees, 20'000u);
      EXPECT_EQ(top_saw, frees) << "frees went past the recycle layer on top";
    }
    ASSERT_TRUE(e.Stop().ok());
    EXPECT_TRUE(e.final_audit().ok) << e.final_audit().message;
    EXPECT_TRUE(e.final_audit().exact);
  }
}

// The same cache keyed by the rte_mempool pointer: a pool made where a freed one was (same name
// and size: DPDK hands it the same memory) must be served by its own slot, not through the
// freed pool's. The main lcore is the worker here (an EAL lcore: its slot is cached).
TEST_F(DataplaneTest, WorkerSlotCacheServesAPoolMadeWhereAFreedOneWas) {
  constexpr unsigned kMbufs = 64;
  const int core = static_cast<int>(rte_lcore_id());
  const auto make = [&] {
    auto mp = CreatePktmbufPool("wscache", kMbufs, RTE_MBUF_DEFAULT_BUF_SIZE,
                                static_cast<int>(rte_socket_id()),
                                {.strategy = pool::StrategySpec::Parse("headpool").value()});
    EXPECT_TRUE(mp.ok()) << mp.status();
    if (!mp.ok()) return static_cast<rte_mempool*>(nullptr);
    EXPECT_TRUE(PoolOf(*mp)->RegisterWorker(core).ok());
    return *mp;
  };
  rte_mempool* a = make();
  ASSERT_NE(a, nullptr);
  // Single-object calls cache this thread's slot of `a` and leave mbufs on its hot list.
  rte_mbuf* m[8];
  for (rte_mbuf*& x : m) ASSERT_NE(x = rte_pktmbuf_alloc(a), nullptr);
  for (rte_mbuf* x : m) rte_pktmbuf_free(x);
  ASSERT_EQ(PoolOf(a)->CoreGauges(core).objects[static_cast<int>(pool::Layer::kHeadPool)], 8u);
  const void* a_addr = a;
  rte_mempool_free(a);
  rte_mempool* b = make();
  ASSERT_NE(b, nullptr);
  if (static_cast<const void*>(b) != a_addr) {
    (void)PoolOf(b)->UnregisterWorker(core);
    rte_mempool_free(b);
    GTEST_SKIP() << "the new pool did not get the freed pool's address: nothing to check here";
  }
  std::set<void*> own;
  rte_mempool_obj_iter(
      b,
      [](rte_mempool*, void* arg, void* obj, unsigned) {
        static_cast<std::set<void*>*>(arg)->insert(obj);
      },
      &own);
  ASSERT_EQ(own.size(), kMbufs);
  std::vector<rte_mbuf*> got;
  for (unsigned i = 0; i < kMbufs; ++i) {
    rte_mbuf* x = rte_pktmbuf_alloc(b);
    ASSERT_NE(x, nullptr) << i;
    EXPECT_EQ(own.count(x), 1u) << "mbuf " << i << " is not one of the new pool's";
    got.push_back(x);
    if (i == 0) rte_pktmbuf_free(rte_pktmbuf_alloc(b));  // a single get and put on the way
  }
  EXPECT_EQ(rte_pktmbuf_alloc(b), nullptr) << "the new pool handed out more than it holds";
  for (rte_mbuf* x : got) rte_pktmbuf_free(x);
  EXPECT_EQ(rte_mempool_avail_count(b), kMbufs);
  const pool::CoreCountersSnapshot c = PoolOf(b)->CoreStats(core);
  EXPECT_EQ(c.allocs, kMbufs + 1);
  EXPECT_EQ(c.frees, kMbufs + 1);
  ASSERT_TRUE(PoolOf(b)->UnregisterWorker(core).ok());
  rte_mempool_free(b);
}

TEST_F(DataplaneTest, PoolExhaustionCountsNombufAndRecovers) {
  const std::string src = Vdev("net_null");
  rte_ring *hrx, *htx;
  const std::string hold = RingPort(&hrx, &htx, 8192);  // holds more than the pool has
  EngineConfig c =
      Config(ForwardingMode::kIo, {{src, hold, ""}, {hold, src, ""}}, {{1, {{src, 0}}}});
  c.mbufs = 1024;
  c.rx_ring = 256;
  c.tx_ring = 256;
  Engine& e = Make(c);
  ASSERT_TRUE(e.Start().ok());
  // Everything ends up in the hold ring; then RX refills fail.
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).nombuf > 100; }));
  const Totals stuck = Sum(e.Snapshot());
  EXPECT_LE(stuck.tx, 1024u);
  EXPECT_EQ(rte_ring_count(htx), stuck.tx);
  // Give the buffers back: forwarding resumes.
  uint64_t freed = Drain(htx, stuck.tx).size();
  EXPECT_EQ(freed, stuck.tx);
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx > stuck.tx + 500; }));
  // Park the worker, then give everything back and stop.
  ASSERT_TRUE(e.PauseWorker(1, std::chrono::seconds(10)).ok());
  Drain(htx);
  ExpectExactAudit();
  const Totals t = Sum(e.Snapshot());
  EXPECT_EQ(t.rx, t.tx + t.dropped);
}

// ---------------------------------------------------------------------------------------------
// net_af_packet on a veth pair in a network namespace: run by af_packet_test.sh, which creates
// the namespace and the pair, sets SKBNF_IT_VETH=<a>,<b> and runs this test inside it.

TEST_F(DataplaneTest, AfPacketVethPair) {
  const char* env = std::getenv("SKBNF_IT_VETH");
  if (env == nullptr) GTEST_SKIP() << "needs af_packet_test.sh (netns + veth pair)";
  const std::string pair = env;
  const std::string va = pair.substr(0, pair.find(',')), vb = pair.substr(pair.find(',') + 1);
  const auto in = (Dir() / "in.pcap").string(), out = (Dir() / "out.pcap").string();
  constexpr uint32_t kN = 2000;
  std::vector<Frame> frames;
  for (uint32_t i = 0; i < kN; ++i)
    frames.push_back(UdpFrame(Ip(10, 0, 0, 1), Ip(10, 0, 1, i % 250), 64, 100));
  ASSERT_TRUE(WritePcap(in, frames).ok());
  const std::string src = Vdev("net_pcap", "rx_pcap=" + in);
  const std::string sink = Vdev("net_pcap", "tx_pcap=" + out);
  const std::string afa = Vdev("net_af_packet", "iface=" + va);
  const std::string afb = Vdev("net_af_packet", "iface=" + vb);
  // pcap -> af_packet(a) -> veth -> af_packet(b) -> pcap
  Engine& e = Make(Config(ForwardingMode::kIo,
                          {{src, afa, ""}, {afa, src, ""}, {afb, sink, ""}, {sink, afb, ""}},
                          {{1, {{src, 0}, {afb, 0}}}}, "recycle+magazine"));
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(WaitFor([&] {
    const EngineSnapshot s = e.Snapshot();
    return s.workers[0].ports[PortId(sink)].tx_packets >= kN;
  }));
  const Totals t = Sum(e.Snapshot());
  ExpectExactAudit();
  auto got = ReadPcap(out);
  ASSERT_TRUE(got.ok());
  // Only our frames cross the pair (IPv6 is off on it): every one arrives, unchanged.
  size_t ours = 0;
  for (const Frame& f : *got) {
    if (f.bytes.size() == 100 && f.bytes[12] == 0x08 && f.bytes[13] == 0x00) ++ours;
  }
  EXPECT_EQ(ours, kN);
  EXPECT_EQ(t.dropped, 0u);
}

// A port whose TX is full and whose link goes down and up, on a real kernel interface:
// net_pcap (replaying without end) -> io -> af_packet(a) -> veth -> af_packet(b) -> net_null.
// With skbva down, the kernel takes no frame from af_packet(a)'s TX ring (sendto: ENETDOWN), the
// ring fills and tx_burst takes fewer than offered: the rest are dropped and counted as tx_full
// on the port they came in on, and nothing else is counted. Back up, the pending frames go out
// and forwarding resumes (net_null's TX moves again). Exact audit after. (The link status is not
// asserted: with Debian's DPDK 22.11 the af_packet port's rte_eth_link_get_nowait kept reading
// "up" through 20 s of the interface being down.)
TEST_F(DataplaneTest, AfPacketTxFullAndLinkDownUp) {
  const char* env = std::getenv("SKBNF_IT_VETH");
  if (env == nullptr) GTEST_SKIP() << "needs af_packet_test.sh (netns + veth pair)";
  const std::string pair = env;
  const std::string va = pair.substr(0, pair.find(',')), vb = pair.substr(pair.find(',') + 1);
  const auto in = (Dir() / "in.pcap").string();
  std::vector<Frame> frames;
  for (uint32_t i = 0; i < 256; ++i)
    frames.push_back(UdpFrame(Ip(10, 0, 0, 1), Ip(10, 0, 1, i % 250), 64, 100));
  ASSERT_TRUE(WritePcap(in, frames).ok());
  const std::string src = Vdev("net_pcap", "rx_pcap=" + in + ",infinite_rx=1");
  const std::string afa = Vdev("net_af_packet", "iface=" + va + ",framecnt=256");
  const std::string afb = Vdev("net_af_packet", "iface=" + vb);
  const std::string sink = Vdev("net_null");
  Engine& e = Make(Config(ForwardingMode::kIo,
                          {{src, afa, ""}, {afa, src, ""}, {afb, sink, ""}, {sink, afb, ""}},
                          {{1, {{src, 0}, {afb, 0}}}}, "recycle+magazine"));
  ASSERT_TRUE(e.Start().ok());
  const uint16_t src_id = PortId(src), sink_id = PortId(sink);
  auto sink_tx = [&] { return e.Snapshot().workers[0].ports[sink_id].tx_packets; };
  auto tx_full = [&] { return e.Snapshot().workers[0].ports[src_id].drops[kDropTxFull]; };
  auto ip = [&](const std::string& state) {
    return std::system(("ip link set " + va + " " + state).c_str());
  };
  // Forwarding through the pair.
  ASSERT_TRUE(WaitFor([&] { return sink_tx() >= 1000; }));
  const uint64_t full_before = tx_full();

  // Link down: the TX ring fills, the rest is dropped as tx_full.
  ASSERT_EQ(ip("down"), 0);
  ASSERT_TRUE(WaitFor([&] { return tx_full() > full_before + 1000; })) << "tx_full " << tx_full();
  const uint64_t sink_while_down = sink_tx();

  // Link up: forwarding resumes.
  ASSERT_EQ(ip("up"), 0);
  ASSERT_TRUE(WaitFor([&] { return sink_tx() > sink_while_down + 1000; }))
      << "forwarding did not resume: " << sink_tx() << " vs " << sink_while_down;
  const Totals t = Sum(e.Snapshot());
  EXPECT_GT(t.drops[kDropTxFull], 1000u);
  // io mode: tx_full is the only reason a packet is dropped here.
  EXPECT_EQ(t.dropped, t.drops[kDropTxFull]);
  ExpectExactAudit();
}

// ---------------------------------------------------------------------------------------------
// net_af_xdp on a veth pair in a network namespace (af_xdp_test.sh sets SKBNF_IT_XDP_VETH=<a>,<b>;
// copy mode: veth has no zero-copy). net_ring in -> io -> af_xdp(a) -> veth -> af_xdp(b) -> io
// -> net_ring out: the kernel is the peer. DPDK 22.11's net_af_xdp gives the kernel mbufs of
// the engine's own pool (its UMEM) and frees none of what its rings hold when it closes
// (drivers/net/af_xdp/rte_eth_af_xdp.c eth_dev_close; see dataplane/dpdk/af_xdp_rings.cc):
// Stop takes those back from the rings and counts what the kernel keeps inside from the rings'
// indices, so the final audit is exact, and a one-mbuf leak anywhere else still fails it.

class AfXdpTest : public DataplaneTest {
 protected:
  void SetUp() override {
    const char* env = std::getenv("SKBNF_IT_XDP_VETH");
    if (env == nullptr) GTEST_SKIP() << "needs af_xdp_test.sh (netns + veth pair)";
    const std::string pair = env;
    va_ = pair.substr(0, pair.find(','));
    vb_ = pair.substr(pair.find(',') + 1);
  }

  Engine& MakeAfXdp(const std::string& pool_ops = "skbnf") {
    in_ = RingPort(&in_rx_, &in_tx_);
    out_ = RingPort(&out_rx_, &out_tx_);
    const std::string afa = Vdev("net_af_xdp", "iface=" + va_);
    const std::string afb = Vdev("net_af_xdp", "iface=" + vb_);
    EngineConfig c = Config(ForwardingMode::kIo,
                            {{in_, afa, ""}, {afa, in_, ""}, {afb, out_, ""}, {out_, afb, ""}},
                            {{1, {{in_, 0}, {afa, 0}, {afb, 0}, {out_, 0}}}}, "recycle+magazine");
    c.pool_ops = ParsePoolOps(pool_ops).value();
    return Make(c);
  }

  // Sends `n` frames through the pair in chunks of 128, each chunk waited for (bounded), so
  // nothing is dropped for lack of room; returns the frames that came out.
  std::vector<Frame> Forward(uint32_t n) {
    std::vector<Frame> got;
    for (uint32_t done = 0; done < n;) {
      const uint32_t k = std::min<uint32_t>(128, n - done);
      std::vector<Frame> frames;
      for (uint32_t i = 0; i < k; ++i) {
        Frame f = UdpFrame(Ip(10, 0, 0, 1), Ip(10, 0, 1, (done + i) % 250), 64, 100);
        f.bytes[60] = static_cast<uint8_t>((done + i) >> 8);  // payload: a sequence number
        f.bytes[61] = static_cast<uint8_t>(done + i);
        frames.push_back(std::move(f));
      }
      Inject(in_rx_, frames);
      const size_t want = got.size() + k;
      const bool came = WaitFor(
          [&] {
            for (Frame& f : Drain(out_tx_)) got.push_back(std::move(f));
            return got.size() >= want;
          },
          5s);
      if (!came) break;
      done += k;
    }
    return got;
  }

  std::string va_, vb_, in_, out_;
  rte_ring *in_rx_ = nullptr, *in_tx_ = nullptr, *out_rx_ = nullptr, *out_tx_ = nullptr;
};

TEST_F(AfXdpTest, ForwardsThroughTheKernelAndStopAccountsForEveryMbuf) {
  Engine& e = MakeAfXdp();
  ASSERT_TRUE(e.Start().ok());
  constexpr uint32_t kN = 2000;
  const std::vector<Frame> got = Forward(kN);
  // Every frame came out once, unchanged (io), in order of its sequence number.
  ASSERT_EQ(got.size(), kN);
  for (uint32_t i = 0; i < kN; ++i) {
    ASSERT_EQ(got[i].bytes.size(), 100u) << i;
    EXPECT_EQ(got[i].bytes[60] * 256 + got[i].bytes[61], static_cast<int>(i & 0xffff));
  }
  const Totals t = Sum(e.Snapshot());
  EXPECT_EQ(t.dropped, 0u);
  ASSERT_TRUE(e.Stop().ok());
  const AuditReport& a = e.final_audit();
  EXPECT_TRUE(a.ok) << a.message;
  // What the kernel kept (counted from the rings) is exactly what the pool's counters say is out.
  EXPECT_EQ(a.available + a.held_by_pmd, a.populated) << a.message;
  EXPECT_EQ(a.pool.handed_out, a.held_by_pmd) << a.message;
  EXPECT_EQ(a.pool.double_frees, 0u);
  EXPECT_NE(a.message.find("taken back from 2 AF_XDP socket(s)"), std::string::npos) << a.message;
}

// Nothing received: the kernel took nothing off the fill rings; both (2 x 2,048,
// ETH_AF_XDP_DFLT_NUM_DESCS each) come back whole, with either pool. (One engine per process:
// without a bpffs, libxdp loads a single XDP program per interface and a second AF_XDP port on
// the same interface in the same process is refused.)
void ExpectIdleStopExact(Engine& e) {
  ASSERT_TRUE(e.Start().ok());
  ASSERT_TRUE(e.Stop().ok());
  const AuditReport& a = e.final_audit();
  EXPECT_TRUE(a.ok) << a.message;
  EXPECT_EQ(a.held_by_pmd, 0u) << a.message;
  EXPECT_EQ(a.available, a.populated) << a.message;
  EXPECT_NE(a.message.find("4096 mbufs taken back"), std::string::npos) << a.message;
}

TEST_F(AfXdpTest, IdleStopGivesBackTheFillRings) { ExpectIdleStopExact(MakeAfXdp("skbnf")); }

TEST_F(AfXdpTest, IdleStopGivesBackTheFillRingsRingMpMc) {
  ExpectIdleStopExact(MakeAfXdp("ring_mp_mc"));
}

// Where every buffer is (issue 32 item 1; forward.cc "Where every buffer is"): with the worker
// parked, the pool's counters around each PMD call say how many mbufs each AF_XDP port's rings
// hold, and the kernel's ring indices (an independent source: af_xdp_rings.cc, read as the
// kernel shares them) say the same number; the parked worker holds none; an mbuf the test
// keeps is the other threads'. The net_ring ports are the test's own rings: it allocated what
// came in (their RX shows minus that) and drained and freed what went out (their TX shows
// that: the PMD never freed it).
TEST_F(AfXdpTest, BufferPlacesMatchTheKernelsRings) {
  Engine& e = MakeAfXdp();
  ASSERT_TRUE(e.Start().ok());
  constexpr int64_t kN = 1000;
  ASSERT_EQ(Forward(kN).size(), static_cast<size_t>(kN));
  rte_mbuf* held = rte_pktmbuf_alloc(MempoolOf(e));
  ASSERT_NE(held, nullptr);
  const unsigned lcore = e.WorkerLcores().at(0);
  ASSERT_TRUE(e.PauseWorker(lcore).ok());
  const AuditReport a = e.Audit();  // the worker is parked already: taken as it is
  const std::vector<PortInfo> ports = e.Ports();
  ASSERT_TRUE(e.ResumeWorker(lcore).ok());
  EXPECT_TRUE(a.ok) << a.message;
  const BufferPlaces& b = a.places;
  ASSERT_TRUE(b.has);
  ASSERT_EQ(b.cores.size(), 1u);
  EXPECT_EQ(b.cores[0].in_hands, 0);
  EXPECT_EQ(b.other_threads, 1);  // `held`
  EXPECT_EQ(b.total, static_cast<int64_t>(a.in_flight)) << a.message;
  int checked = 0;
  for (const BufferPlaces::Port& bp : b.ports) {
    const PortInfo* pi = nullptr;
    for (const PortInfo& p : ports) {
      if (p.id == bp.id) pi = &p;
    }
    ASSERT_NE(pi, nullptr) << bp.name;
    if (bp.name == in_) {
      EXPECT_EQ(bp.rx_ring, -kN);
      EXPECT_EQ(bp.tx_ring, 0);
    } else if (bp.name == out_) {
      EXPECT_EQ(bp.rx_ring, 0);
      EXPECT_EQ(bp.tx_ring, kN);
    } else {
      ASSERT_TRUE(pi->has_ring_mbufs) << bp.name;
      EXPECT_EQ(pi->ring_mbufs_source, "af_xdp_rings");
      EXPECT_GT(bp.rx_ring, 0) << bp.name;  // the fill ring, at least
      EXPECT_EQ(bp.rx_ring, static_cast<int64_t>(pi->rx_ring_mbufs)) << bp.name;
      EXPECT_EQ(bp.tx_ring, static_cast<int64_t>(pi->tx_ring_mbufs)) << bp.name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);
  rte_pktmbuf_free(held);
  ASSERT_TRUE(e.Stop().ok());
  EXPECT_TRUE(e.final_audit().ok) << e.final_audit().message;
}

TEST_F(AfXdpTest, PlantedOneMbufLeakStillFailsTheAudit) {
  Engine& e = MakeAfXdp();
  ASSERT_TRUE(e.Start().ok());
  ASSERT_EQ(Forward(300).size(), 300u);
  rte_mbuf* leak = rte_pktmbuf_alloc(MempoolOf(e));  // allocated, never freed before Stop
  ASSERT_NE(leak, nullptr);
  ASSERT_TRUE(e.Stop().ok());
  const AuditReport& a = e.final_audit();
  EXPECT_FALSE(a.ok) << a.message;
  EXPECT_EQ(a.pool.handed_out, a.held_by_pmd + 1) << a.message;
  rte_pktmbuf_free(leak);
}

// ---------------------------------------------------------------------------------------------
// Two workers over AF_XDP ports that hold buffers (issue 22 items 5 and 6). af_xdp_test.sh sets
// SKBNF_IT_XDP_2W=<xa>,<ka>,<xb>,<kb> (two veth pairs in its namespace).
//
// Why not two RX queues of one AF_XDP port (the first choice): DPDK 22.11's net_af_xdp
// takes its queue limit from ETHTOOL_GCHANNELS' max_combined and treats 0 as one queue
// (drivers/net/af_xdp/rte_eth_af_xdp.c get_iface_info: "If the device says it has no channels,
// then all traffic is sent to a single stream, so max queues = 1"), and veth reports only
// rx/tx channels, never combined ones (drivers/net/veth.c veth_get_channels), so
// `queue_count=2` on a veth created with numrxqueues 2 is refused at probe ("Specified queue
// count 2 is larger than combined queue count 1"; start_queue=1 likewise). RSS over two queues
// of one port with buffers in the rings is OvsTwoQueuesTest below (virtio-user, Open vSwitch).
// Here, what the multi-queue item checks that needs a PMD holding buffers:
//   ka -> xa (worker A, lcore 1) -> io -> xb -> kb, and kb -> xb (worker B, lcore 2) -> xa -> ka.
//   net_af_xdp has one TX queue per port here, so both workers share each port's TX queue
//   (under its lock), and the PMD frees a sent mbuf when a later TX call on that queue reaps the
//   completion ring (pull_umem_cq), whichever worker makes it: frees arrive on the other core.
// Checked:
//   - per-core RX/TX sum to each port's PMD counts and to the frames the kernel sent;
//   - ring occupancy (PortInfo::rx_ring_mbufs/tx_ring_mbufs, from the XDP rings' indices) is
//     non-zero with traffic flowing and equals, with the workers parked, the pool's in-flight
//     count (populated - available), an independent source;
//   - no stranding: traffic stopped (worker A's queue idle, its layers holding objects), worker B
//     allocates until the pool refuses: exactly populated - what the rings hold, within 10 ms of
//     B's own TSC (AllocateAll, tests/integration/allocate_all.h);
//   - Stop: exact audit.
class AfXdpTwoWorkersTest : public DataplaneTest {
 protected:
  void SetUp() override {
    const char* env = std::getenv("SKBNF_IT_XDP_2W");
    if (env == nullptr) GTEST_SKIP() << "needs af_xdp_test.sh (netns + veth pairs)";
    v_ = absl::StrSplit(env, ',');
    ASSERT_EQ(v_.size(), 4u) << env;
  }

  // Sends `n` frames on a kernel interface from a packet socket (64 flows).
  static uint64_t Send(int fd, const std::string& iface, uint32_t first, uint32_t n) {
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = static_cast<int>(if_nametoindex(iface.c_str()));
    to.sll_halen = 6;
    uint64_t sent = 0;
    for (uint32_t i = first; i < first + n; ++i) {
      Frame f = UdpFrame(Ip(10, 0, 0, 1), Ip(10, 0, 1, i % 250), 64, 100,
                         static_cast<uint16_t>(1024 + i % 64));
      if (sendto(fd, f.bytes.data(), f.bytes.size(), 0, reinterpret_cast<sockaddr*>(&to),
                 sizeof(to)) == static_cast<ssize_t>(f.bytes.size())) {
        ++sent;
      }
    }
    return sent;
  }

  std::vector<std::string> v_;
};

struct Rings {
  uint64_t rx = 0, tx = 0;
  bool known = true;
  uint64_t total() const { return rx + tx; }
};

Rings RingMbufs(Engine& e) {
  Rings r;
  for (const PortInfo& p : e.Ports()) {
    r.known &= p.has_ring_mbufs;
    r.rx += p.rx_ring_mbufs;
    r.tx += p.tx_ring_mbufs;
  }
  return r;
}

// Times the kernel preempted the thread whose name ends in `comm` (DPDK names its lcore threads
// "lcore-worker-<lcore>" or "rte-worker-<lcore>"): nonvoluntary_ctxt_switches of
// /proc/self/task/<tid>/status. -1 if not found.
int64_t Preemptions(const std::string& comm) {
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream c(t.path() / "comm");
    std::string name;
    std::getline(c, name);
    if (name.size() < comm.size() ||
        name.compare(name.size() - comm.size(), comm.size(), comm) != 0) {
      continue;
    }
    std::ifstream status(t.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) {
        return std::stoll(line.substr(line.find(':') + 1));
      }
    }
  }
  return -1;
}

TEST_F(AfXdpTwoWorkersTest, SharedTxQueuesExactAuditPerCoreSumsAndNoStranding) {
  const std::string xa = Vdev("net_af_xdp", "iface=" + v_[0]);
  const std::string xb = Vdev("net_af_xdp", "iface=" + v_[2]);
  Engine& e = Make(Config(ForwardingMode::kIo, {{xa, xb, ""}, {xb, xa, ""}},
                          {{1, {{xa, 0}}}, {2, {{xb, 0}}}}, "recycle+magazine"));
  absl::StatusOr<AllocateAll*> alloc = AllocateAll::Install(e);
  ASSERT_TRUE(alloc.ok()) << alloc.status();
  ASSERT_TRUE(e.Start().ok());
  const uint16_t a_id = PortId(xa), b_id = PortId(xb);
  for (const PortInfo& p : e.Ports()) {
    EXPECT_TRUE(p.has_ring_mbufs) << p.name;
    EXPECT_EQ(p.ring_mbufs_source, "af_xdp_rings");
    EXPECT_TRUE(p.tx_shared) << p.name;
  }
  const int fd = socket(AF_PACKET, SOCK_RAW, 0);
  ASSERT_GE(fd, 0);
  auto rx_total = [&] { return Sum(e.Snapshot()).rx; };

  // Traffic both ways in chunks (each waited for, bounded: nothing dropped for lack of room);
  // halfway, with frames still arriving, both workers parked: ring occupancy == in flight.
  constexpr uint32_t kChunk = 200, kChunks = 16;
  uint64_t sent_a = 0, sent_b = 0;
  bool checked_in_flight = false;
  for (uint32_t k = 0; k < kChunks; ++k) {
    sent_a += Send(fd, v_[1], k * kChunk, kChunk);
    sent_b += Send(fd, v_[3], k * kChunk, kChunk);
    if (k == kChunks / 2) {
      ASSERT_TRUE(e.PauseWorker(1).ok());
      ASSERT_TRUE(e.PauseWorker(2).ok());
      const Rings r = RingMbufs(e);
      const uint64_t in_flight = e.mempool_info().populated - rte_mempool_avail_count(MempoolOf(e));
      const Rings r2 = RingMbufs(e);
      const absl::Status resumed1 = e.ResumeWorker(1);
      ASSERT_TRUE(resumed1.ok()) << resumed1;
      const absl::Status resumed2 = e.ResumeWorker(2);
      ASSERT_TRUE(resumed2.ok()) << resumed2;
      ASSERT_TRUE(r.known);
      EXPECT_GT(r.rx, 0u);
      // r.tx: what the TX rings still hold (the last sends, reaped by a later TX call or by an
      // idle poll's reclaim, forward.cc TxReclaim): often 0 here, counted exactly either way.
      EXPECT_EQ(r.total(), r2.total()) << "rings moved while the workers were parked";
      EXPECT_EQ(r.total(), in_flight) << "rx " << r.rx << " tx " << r.tx;
      checked_in_flight = true;
      std::printf("parked with traffic flowing: rings rx %lu + tx %lu = pool in flight %lu\n",
                  static_cast<unsigned long>(r.rx), static_cast<unsigned long>(r.tx),
                  static_cast<unsigned long>(in_flight));
    }
    ASSERT_TRUE(WaitFor([&] { return rx_total() >= sent_a + sent_b; }, 5s))
        << "received " << rx_total() << " of " << sent_a + sent_b;
  }
  close(fd);
  ASSERT_TRUE(checked_in_flight);
  ASSERT_EQ(sent_a + sent_b, uint64_t{2} * kChunk * kChunks);

  // Per-core sums against the ports' totals (the PMD's own counters) and what was sent.
  const EngineSnapshot s = e.Snapshot();
  uint64_t rx[2] = {}, tx[2] = {};
  for (const WorkerSnapshot& w : s.workers) {
    for (int i = 0; i < 2; ++i) {
      const uint16_t id = i == 0 ? a_id : b_id;
      rx[i] += w.ports[id].rx_packets;
      tx[i] += w.ports[id].tx_packets;
    }
    EXPECT_GT(w.rx_packets, 0u) << "worker " << w.lcore;
    EXPECT_GT(w.tx_packets, 0u) << "worker " << w.lcore;
  }
  EXPECT_EQ(rx[0], sent_a);
  EXPECT_EQ(rx[1], sent_b);
  EXPECT_EQ(Sum(s).dropped, 0u);
  for (const PortInfo& p : e.Ports()) {
    ASSERT_TRUE(p.has_pmd_stats);
    const int i = p.id == a_id ? 0 : 1;
    EXPECT_EQ(p.pmd.ipackets, rx[i]) << p.name;
    EXPECT_EQ(p.pmd.opackets, tx[i]) << p.name;
  }
  std::printf("per-core sums = PMD counts: %s rx %lu tx %lu, %s rx %lu tx %lu\n", xa.c_str(),
              static_cast<unsigned long>(rx[0]), static_cast<unsigned long>(tx[0]), xb.c_str(),
              static_cast<unsigned long>(rx[1]), static_cast<unsigned long>(tx[1]));

  // No stranding: worker A idle with objects in its layers; worker B takes everything not in
  // the rings, within 10 ms of its own clock.
  uint64_t a_layers = 0;
  for (const WorkerSnapshot& w : e.Snapshot().workers) {
    if (w.lcore != 1) continue;
    for (uint64_t n : w.gauges.objects) a_layers += n;
  }
  EXPECT_GT(a_layers, 0u) << "worker A's layers hold nothing: no reclaim would be exercised";
  const Rings before = RingMbufs(e);
  const uint64_t populated = e.mempool_info().populated;
  const uint64_t want = populated - before.total();
  // Both workers busy-poll on their own lcores; on this host (2 vCPUs shared by several jobs)
  // the kernel may preempt either for a scheduler slice (the reclaimer then waits out its
  // reclaim_wait, 1 ms, and the refused Get is retried), which no pool can shorten: more than
  // 10 ms fails the test unless a worker was preempted during the call (then it is reported).
  const int64_t pre_a0 = Preemptions("-worker-1"), pre_b0 = Preemptions("-worker-2");
  ASSERT_GE(pre_a0, 0) << "no thread *-worker-1";
  ASSERT_GE(pre_b0, 0) << "no thread *-worker-2";
  auto got = (*alloc)->Run(2, want, 100ms);
  const int64_t pre_a = Preemptions("-worker-1") - pre_a0;
  const int64_t pre_b = Preemptions("-worker-2") - pre_b0;
  const Rings after = RingMbufs(e);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(before.total(), after.total()) << "rings moved during the check";
  const double ms = 1e3 * static_cast<double>(got->tsc_cycles) / static_cast<double>(got->tsc_hz);
  std::printf(
      "no stranding: worker 2 allocated %lu of populated %lu - in rings %lu = %lu in "
      "%.3f ms of its TSC (%lu refusals, the first at %lu; worker 1's layers held %lu; "
      "reclaims %lu, timed out %lu)\n",
      static_cast<unsigned long>(got->count), static_cast<unsigned long>(populated),
      static_cast<unsigned long>(before.total()), static_cast<unsigned long>(want), ms,
      static_cast<unsigned long>(got->refusals), static_cast<unsigned long>(got->first_refusal),
      static_cast<unsigned long>(a_layers), static_cast<unsigned long>(e.pool()->reclaims()),
      static_cast<unsigned long>(e.pool()->reclaim_timeouts()));
  EXPECT_EQ(got->count, want);
  EXPECT_FALSE(got->extra) << "more was free than the pool's size minus the rings";
  // Over 10 ms is allowed only when the scheduler preempted a worker during the call.
  EXPECT_TRUE(ms <= 10.0 || pre_a + pre_b > 0) << ms << " ms with neither worker preempted";
  if (ms <= 10.0) {
    std::printf("  10 ms bound held: %.3f ms (workers preempted during the call: A %ld, B %ld)\n",
                ms, static_cast<long>(pre_a), static_cast<long>(pre_b));
  } else {
    std::printf(
        "  10 ms bound exceeded (%.3f ms) with worker A preempted %ld, B %ld times by the "
        "host's scheduler: not the pool's doing, reported, not failed\n",
        ms, static_cast<long>(pre_a), static_cast<long>(pre_b));
  }

  // Stop: what the kernel kept is counted from its rings, and the pool agrees exactly.
  ASSERT_TRUE(e.Stop().ok());
  const AuditReport& a = e.final_audit();
  EXPECT_TRUE(a.ok) << a.message;
  EXPECT_EQ(a.available + a.held_by_pmd, a.populated) << a.message;
  EXPECT_EQ(a.pool.handed_out, a.held_by_pmd) << a.message;
  EXPECT_EQ(a.pool.double_frees, 0u);
  EXPECT_NE(a.message.find("taken back from 2 AF_XDP socket(s)"), std::string::npos) << a.message;
}

// Two RX queues of ONE port over a PMD that holds buffers, two workers (issue 22, item 5):
// Open vSwitch-DPDK (started by ovs_dpdk_test.sh, which sets SKBNF_IT_OVS_MQ=<dir>,<si>,<so>:
// the vhost-user sockets <dir>/vhu0.sock and vhu1.sock, OVS's internal ports) is the peer.
//   kernel -> si -> OVS (tx-steering=hash over the guest's queues) -> vhu0 -> net_virtio_user
//   port A, queues=2: queue 0 polled by worker 1 (lcore 1), queue 1 by worker 2 (lcore 2)
//   -> io -> port B (net_virtio_user, queues=1: one TX queue shared by both workers) -> vhu1 -> so
// virtio's TX path frees a sent mbuf when a later transmit on that queue reclaims the used
// descriptor (virtio_xmit_cleanup), whichever worker makes it: frees arrive on the other core.
// virtio_user gives every RX descriptor an mbuf when the queue starts and refills each one it
// takes (drivers/net/virtio/virtio_rxtx.c), so the rings hold at least their 3 x 1,024
// descriptors: the "pool - in rings" of the no-stranding check is the pool's in-flight count
// taken with both workers parked, and it must cover those descriptors.
// Checked: both workers receive (RSS spread the flows), per-core RX of port A sums to its PMD
// count and to the frames sent, per-core TX to port B's; no stranding within 10 ms (as in
// AfXdpTwoWorkersTest); Stop: exact audit (virtio gives its ring mbufs back at queue release).
class OvsTwoQueuesTest : public DataplaneTest {
 protected:
  void SetUp() override {
    const char* env = std::getenv("SKBNF_IT_OVS_MQ");
    if (env == nullptr) GTEST_SKIP() << "needs ovs_dpdk_test.sh (Open vSwitch-DPDK peer)";
    v_ = absl::StrSplit(env, ',');
    ASSERT_EQ(v_.size(), 3u) << env;
  }
  std::vector<std::string> v_;
};

TEST_F(OvsTwoQueuesTest, RssOverTwoQueuesOfOnePortExactAuditPerCoreSumsAndNoStranding) {
  constexpr uint32_t kRing = 1024;
  const std::string a = Vdev("net_virtio_user", absl::StrCat("path=", v_[0],
                                                             "/vhu0.sock,server=1,"
                                                             "queues=2,queue_size=",
                                                             kRing, ",mac=02:00:00:00:5c:00"));
  const std::string b = Vdev("net_virtio_user", absl::StrCat("path=", v_[0],
                                                             "/vhu1.sock,server=1,"
                                                             "queues=1,queue_size=",
                                                             kRing, ",mac=02:00:00:00:5c:01"));
  EngineConfig cfg = Config(ForwardingMode::kIo, {{a, b, ""}, {b, a, ""}},
                            {{1, {{a, 0}, {b, 0}}}, {2, {{a, 1}}}}, "recycle+magazine");
  cfg.rx_queues = 2;  // port A's; port B gets the one its workers poll
  Engine& e = Make(cfg);
  absl::StatusOr<AllocateAll*> alloc = AllocateAll::Install(e);
  ASSERT_TRUE(alloc.ok()) << alloc.status();
  ASSERT_TRUE(e.Start().ok());
  const uint16_t a_id = PortId(a), b_id = PortId(b);
  for (const PortInfo& p : e.Ports()) {
    if (p.id == b_id) {
      EXPECT_TRUE(p.tx_shared) << "port B must have one TX queue for both workers";
    }
  }
  auto link_up = [&](uint16_t id) {
    rte_eth_link l{};
    return rte_eth_link_get_nowait(id, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
  };
  ASSERT_TRUE(WaitFor([&] { return link_up(a_id) && link_up(b_id); }, 30s))
      << "Open vSwitch did not connect to " << v_[0] << "/vhu0.sock and vhu1.sock";

  const int fd = socket(AF_PACKET, SOCK_RAW, 0);
  ASSERT_GE(fd, 0);
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = static_cast<int>(if_nametoindex(v_[1].c_str()));
  to.sll_halen = 6;
  ASSERT_GT(to.sll_ifindex, 0) << v_[1];
  auto rx_of_a = [&] {
    uint64_t n = 0;
    for (const WorkerSnapshot& w : e.Snapshot().workers) n += w.ports[a_id].rx_packets;
    return n;
  };
  // Open vSwitch may report the link up before it polls vhu1's queues, and it enables each of
  // them on its own (VHOST_USER_SET_VRING_ENABLE): one frame at a time, over changing flows so
  // that RSS hands them to both workers, until a frame has come out of the far internal port (a
  // packet socket on it) and both workers' TX queues have given frames to OVS, with none of
  // them left waiting. A queue OVS does not poll yet only holds these few frames (no drop); the
  // chunks below, half of them on each queue, would fill it. These frames count in `sent`.
  uint64_t sent = 0;
  {
    const int rx = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
    ASSERT_GE(rx, 0);
    sockaddr_ll at{};
    at.sll_family = AF_PACKET;
    at.sll_protocol = htons(ETH_P_ALL);
    at.sll_ifindex = static_cast<int>(if_nametoindex(v_[2].c_str()));
    ASSERT_EQ(bind(rx, reinterpret_cast<sockaddr*>(&at), sizeof(at)), 0) << v_[2];
    bool came_out = false, through = false;
    auto both_queues_drained = [&] {
      const EngineSnapshot snap = e.Snapshot();
      for (const WorkerSnapshot& w : snap.workers) {
        if (w.ports[b_id].tx_packets == 0) return false;
      }
      return Sum(snap).tx >= sent;
    };
    for (int i = 0; i < 600 && !through; ++i) {
      Frame f =
          UdpFrame(Ip(10, 0, 0, 1), Ip(10, 1, 0, 1), 64, 100, static_cast<uint16_t>(1024 + i % 64));
      if (sendto(fd, f.bytes.data(), f.bytes.size(), 0, reinterpret_cast<sockaddr*>(&to),
                 sizeof(to)) == static_cast<ssize_t>(f.bytes.size())) {
        ++sent;
      }
      char buf[2048];
      came_out = WaitFor([&] { return recv(rx, buf, sizeof(buf), 0) > 0; }, 100ms) || came_out;
      through = came_out && WaitFor(both_queues_drained, 100ms);
    }
    close(rx);
    ASSERT_TRUE(came_out) << "no frame came through Open vSwitch and skbnfd to " << v_[2];
    ASSERT_TRUE(through) << "Open vSwitch did not drain both of skbnfd's TX queues on " << b;
  }
  // 64 flows (UDP source ports), in chunks each waited for: nothing is dropped for lack of room.
  constexpr uint32_t kChunk = 200, kChunks = 16;
  for (uint32_t k = 0; k < kChunks; ++k) {
    for (uint32_t i = k * kChunk; i < (k + 1) * kChunk; ++i) {
      Frame f = UdpFrame(Ip(10, 0, 0, 1), Ip(10, 1, 0, 1 + i % 50), 64, 100,
                         static_cast<uint16_t>(1024 + i % 64));
      if (sendto(fd, f.bytes.data(), f.bytes.size(), 0, reinterpret_cast<sockaddr*>(&to),
                 sizeof(to)) == static_cast<ssize_t>(f.bytes.size())) {
        ++sent;
      }
    }
    ASSERT_TRUE(WaitFor([&] { return rx_of_a() >= sent; }, 10s))
        << "received " << rx_of_a() << " of " << sent;
  }
  close(fd);
  ASSERT_GE(sent, uint64_t{kChunk} * kChunks);
  ASSERT_TRUE(WaitFor([&] { return Sum(e.Snapshot()).tx >= sent; }, 10s))
      << "transmitted " << Sum(e.Snapshot()).tx << " of " << sent << ", dropped "
      << Sum(e.Snapshot()).dropped << " (" <<
      [&] {
        std::string by;
        for (const WorkerSnapshot& w : e.Snapshot().workers) {
          for (size_t r = 0; r < kNumDropReasons; ++r) {
            if (w.drops[r] != 0)
              by += absl::StrCat(" lcore ", w.lcore, " reason ", r, ": ", w.drops[r]);
          }
        }
        return by;
      }()
      << ")";

  // Per-core sums against the ports' own counters and what was sent.
  const EngineSnapshot s = e.Snapshot();
  uint64_t rx_a = 0, tx_b = 0, allocs[2] = {}, frees[2] = {};
  for (const WorkerSnapshot& w : s.workers) {
    EXPECT_GT(w.ports[a_id].rx_packets, 0u) << "worker " << w.lcore << ": RSS gave it no flow";
    rx_a += w.ports[a_id].rx_packets;
    tx_b += w.ports[b_id].tx_packets;
    EXPECT_EQ(w.ports[b_id].rx_packets, 0u);
    const int i = w.lcore == 1 ? 0 : 1;
    allocs[i] = w.pool.allocs;  // layers' single-object hits included (pool::Snapshot)
    frees[i] = w.pool.frees;
  }
  EXPECT_EQ(rx_a, sent);
  EXPECT_EQ(tx_b, sent);
  EXPECT_EQ(Sum(s).dropped, 0u);
  for (const PortInfo& p : e.Ports()) {
    ASSERT_TRUE(p.has_pmd_stats);
    if (p.id == a_id) {
      EXPECT_EQ(p.pmd.ipackets, rx_a) << p.name;
    } else {
      EXPECT_EQ(p.pmd.opackets, tx_b) << p.name;
    }
  }
  std::printf(
      "per-core: worker 1 rx %lu, worker 2 rx %lu of %s (sum %lu = PMD = sent %lu); "
      "pool allocs/frees per core: %lu/%lu and %lu/%lu\n",
      static_cast<unsigned long>(s.workers[0].ports[a_id].rx_packets),
      static_cast<unsigned long>(s.workers[1].ports[a_id].rx_packets), a.c_str(),
      static_cast<unsigned long>(rx_a), static_cast<unsigned long>(sent),
      static_cast<unsigned long>(allocs[0]), static_cast<unsigned long>(frees[0]),
      static_cast<unsigned long>(allocs[1]), static_cast<unsigned long>(frees[1]));

  // In flight with both workers parked (traffic over: nothing moves): the rings' mbufs.
  ASSERT_TRUE(e.PauseWorker(1).ok());
  ASSERT_TRUE(e.PauseWorker(2).ok());
  const uint64_t populated = e.mempool_info().populated;
  const uint64_t in_flight = populated - rte_mempool_avail_count(MempoolOf(e));
  const uint64_t in_flight2 = populated - rte_mempool_avail_count(MempoolOf(e));
  ASSERT_TRUE(e.ResumeWorker(1).ok());
  ASSERT_TRUE(e.ResumeWorker(2).ok());
  EXPECT_EQ(in_flight, in_flight2);
  EXPECT_GE(in_flight, uint64_t{3} * kRing) << "the three RX rings' descriptors hold mbufs";

  // Worker A (lcore 1) is left holding objects in its layers, whatever the traffic's last
  // allocs and frees left there: it takes 512 mbufs and frees them on its own core (an RX
  // refill followed by its TX completions), which fills its layers up to their capacity.
  const unsigned wa = 1, wb = 2;
  // (Read while it runs idle: parking a worker hands its layers' objects back.)
  ASSERT_TRUE((*alloc)->Run(wa, 512, 100ms).ok());
  uint64_t a_layers = 0;
  for (const WorkerSnapshot& w : e.Snapshot().workers) {
    if (w.lcore != wa) continue;
    for (uint64_t n : w.gauges.objects) a_layers += n;
  }
  EXPECT_GT(a_layers, 0u) << "worker A's layers hold nothing: no reclaim would be exercised";

  // No stranding: worker A idle (no traffic on its queue) with objects in its layers; worker B
  // takes everything not in the rings within 10 ms of its own TSC (the preemption rule of
  // AfXdpTwoWorkersTest: over 10 ms only with a worker preempted, then reported).
  const uint64_t want = populated - in_flight;
  const std::string ta = absl::StrCat("-worker-", wa), tb = absl::StrCat("-worker-", wb);
  const int64_t pre_a0 = Preemptions(ta), pre_b0 = Preemptions(tb);
  ASSERT_GE(pre_a0, 0) << "no thread *" << ta;
  ASSERT_GE(pre_b0, 0) << "no thread *" << tb;
  const uint64_t reclaims0 = e.pool()->reclaims();
  auto got = (*alloc)->Run(wb, want, 100ms);
  const int64_t pre_a = Preemptions(ta) - pre_a0;
  const int64_t pre_b = Preemptions(tb) - pre_b0;
  ASSERT_TRUE(got.ok()) << got.status();
  const double ms = 1e3 * static_cast<double>(got->tsc_cycles) / static_cast<double>(got->tsc_hz);
  std::printf(
      "no stranding: worker %u allocated %lu of populated %lu - in rings %lu = %lu in %.3f ms "
      "of its TSC (%lu refusals; worker %u's layers held %lu; reclaims %lu, timed out %lu; "
      "preempted A %ld, B %ld)\n",
      wb, static_cast<unsigned long>(got->count), static_cast<unsigned long>(populated),
      static_cast<unsigned long>(in_flight), static_cast<unsigned long>(want), ms,
      static_cast<unsigned long>(got->refusals), wa, static_cast<unsigned long>(a_layers),
      static_cast<unsigned long>(e.pool()->reclaims() - reclaims0),
      static_cast<unsigned long>(e.pool()->reclaim_timeouts()), static_cast<long>(pre_a),
      static_cast<long>(pre_b));
  EXPECT_EQ(got->count, want);
  EXPECT_FALSE(got->extra) << "more was free than the pool's size minus the rings";
  EXPECT_GT(e.pool()->reclaims(), reclaims0) << "worker A's objects came back without a reclaim";
  EXPECT_TRUE(ms <= 10.0 || pre_a + pre_b > 0) << ms << " ms with neither worker preempted";

  ASSERT_TRUE(e.Stop().ok());
  const AuditReport& r = e.final_audit();
  EXPECT_TRUE(r.exact) << r.message;
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.available, r.populated) << r.message;
  EXPECT_EQ(r.pool.double_frees, 0u);
  std::printf("stop: %s\n", r.message.c_str());
}

}  // namespace
}  // namespace skbnf::dpdk

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // SKBNF_IT_HUGE_DIR (a mounted hugetlbfs, set by ovs_dpdk_test.sh for OvsTwoQueuesTest):
  // 2 MiB pages in memory (memfd, no files left behind) with one file descriptor per memseg
  // list: virtio-user shares every memory region with the vhost-user peer, at most 8 of them
  // (DPDK doc/guides/howto/virtio_user_for_container_networking.rst, "Limitations").
  const char* huge_dir = std::getenv("SKBNF_IT_HUGE_DIR");
  std::vector<std::string> memory = {"--no-huge", "-m", "1024"};
  if (huge_dir != nullptr) {
    // -m 256 taken at start (virtio-user shares it with the peer when it connects): Open
    // vSwitch holds most of the test's 600-page reservation; the pool needs about 50 MB.
    memory = {"--in-memory", "--single-file-segments", absl::StrCat("--huge-dir=", huge_dir), "-m",
              "256"};
  }
  ::testing::AddGlobalTestEnvironment(
      new skbnf::dpdk::EalEnvironment("skbnf-it", std::move(memory), 2));
  return RUN_ALL_TESTS();
}
