// SPDX-License-Identifier: BSD-3-Clause
// Buffer-core micro-benchmark: one core, each strategy, alloc+free of one object and of bursts
// of 32 (the DPDK RX burst), in ns per object; plain malloc/free of the same size as reference.
//
//   ./build/bench/pool_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// The benchmark thread is registered as worker core 0 and refills RX port 0, and every object
// carries RX port tag 0, so `recycle` sees the TX->RX pattern of a forwarding loop.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/pool/pool.h"

namespace skbnf::pool {
namespace {

constexpr uint32_t kObjects = 8192;
constexpr uint32_t kEltSize = 2304;  // sizeof(rte_mbuf) + 128 headroom + 2048 data, as DPDK's default

// Reads the RX port tag in the object's first two bytes, as the mbuf check reads m->port.
void PortTag(void*, void* const* objs, unsigned n, int16_t* ports) {
  for (unsigned i = 0; i < n; ++i) std::memcpy(&ports[i], objs[i], sizeof(int16_t));
}

struct BenchPool {
  explicit BenchPool(const std::string& spec_text) {
    PoolConfig c;
    c.store.elt_size = kEltSize;
    c.store.objs_per_slab = 32;
    c.classify = &PortTag;
    auto spec = StrategySpec::Parse(spec_text);
    if (!spec.ok()) std::abort();
    auto p = Pool::Create(c, *spec);
    if (!p.ok()) std::abort();
    pool = std::move(*p);
    size_t bytes = pool->MemSize(kObjects);
    mem = static_cast<char*>(std::aligned_alloc(4096, (bytes + 4095) & ~size_t{4095}));
    std::memset(mem, 0, bytes);  // every object's port tag is 0: RX port 0 of core 0
    if (!pool->Populate(mem, bytes, kObjects, [](void*) {}).ok()) std::abort();
    if (!pool->RegisterWorker(0, {{.port = 0, .ring_size = 512}}).ok()) std::abort();
    pool->SetRxPort(0, 0);
  }
  ~BenchPool() {
    pool.reset();
    std::free(mem);
  }
  std::unique_ptr<Pool> pool;
  char* mem = nullptr;
};

void PerObject(benchmark::State& state, unsigned n) {
  state.counters["ns_per_obj"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * n,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Burst(benchmark::State& state, const char* spec, unsigned n) {
  BenchPool b(spec);
  Pool& p = *b.pool;
  void* objs[64];
  // Warm the layers up to their steady state.
  for (int i = 0; i < 1000; ++i) {
    if (!p.Get(0, objs, n)) std::abort();
    p.Put(0, objs, n);
  }
  for (auto _ : state) {
    if (!p.Get(0, objs, n)) std::abort();
    benchmark::DoNotOptimize(objs[0]);
    p.Put(0, objs, n);
  }
  PerObject(state, n);
}

void BM_Malloc(benchmark::State& state, unsigned n) {
  void* objs[64];
  for (auto _ : state) {
    for (unsigned i = 0; i < n; ++i) objs[i] = std::malloc(kEltSize);
    benchmark::DoNotOptimize(objs[0]);
    for (unsigned i = 0; i < n; ++i) std::free(objs[i]);
  }
  PerObject(state, n);
}

const char* const kSpecs[] = {
    "slab",
    "headpool",
    "magazine",
    "headpool+magazine",
    "recycle",
    "recycle+magazine",
    "lcache",
    "lcache+magazine",
    "magazine,prefetch",
    "recycle+magazine,prefetch",
};

std::vector<unsigned> kBursts = {1u, 32u};

int Register() {
  if (const char* b = std::getenv("POOL_BENCH_BURSTS")) {
    kBursts.clear();
    for (const char* p = b; *p;) {
      kBursts.push_back(static_cast<unsigned>(std::strtoul(p, const_cast<char**>(&p), 10)));
      if (*p == ',') ++p;
    }
  }
  for (unsigned n : kBursts) {
    for (const char* spec : kSpecs) {
      std::string name = std::string("pool/") + spec + "/burst:" + std::to_string(n);
      benchmark::RegisterBenchmark(name.c_str(), [spec, n](benchmark::State& s) {
        BM_Burst(s, spec, n);
      });
    }
    std::string name = "malloc/burst:" + std::to_string(n);
    benchmark::RegisterBenchmark(name.c_str(), [n](benchmark::State& s) { BM_Malloc(s, n); });
  }
  return 0;
}
const int kRegistered = Register();

}  // namespace
}  // namespace skbnf::pool

BENCHMARK_MAIN();
