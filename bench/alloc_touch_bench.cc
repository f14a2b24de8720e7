// SPDX-License-Identifier: BSD-3-Clause
// alloc_touch_bench: per-object cost of alloc+free with the objects touched as a PMD touches
// them (experiment 6 of issue 10). Compares a reference allocator A and a candidate B in one
// process, in alternating pairs (AB, BA, AB, ...), and prints one CSV line per measurement:
//
//   pair,slot,A|B,ns_per_object,objects
//
//   alloc_touch_bench --a=rte_mempool --b=magazine --burst=32 --pairs=10 --ms=200
//
// Allocators: a strategy spec of the buffer core (slab, headpool, magazine, lcache+magazine,
// ...; the calling thread is worker core 0), `rte_mempool` (DPDK's ring_mp_mc with a 256-object
// lcore cache; EAL on lcore 0, 2 MiB hugepages unless --no-huge), or `malloc` (malloc/free of the
// same size: glibc, or whatever LD_PRELOAD puts first, e.g. jemalloc, tcmalloc, mimalloc; bench/run
// does that). 8,192 objects of 2,304 bytes (DPDK's default mbuf element), 512 in flight: see
// alloc_touch_loop.h for what one iteration touches and why.
//
// --no-huge: EAL without hugepages (DPDK then lays its pool out one object per 4 KiB page).
// --bursts=N runs exactly N bursts per measurement instead of --ms (for callgrind: the loop is
// RunLoop<...>, so `--toggle-collect='*RunLoop<*'` counts only it).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "bench/alloc_touch_dpdk.h"
#include "bench/alloc_touch_loop.h"
#include "dataplane/pool/pool.h"

namespace skbnf::bench {
namespace {

constexpr uint32_t kObjects = 8192;
constexpr uint32_t kEltSize = 2304;
constexpr unsigned kDpdkCache = 256;

struct PoolAlloc {
  explicit PoolAlloc(const std::string& spec_text) {
    pool::PoolConfig c;
    c.store.elt_size = kEltSize;
    c.store.objs_per_slab = 32;
    auto spec = pool::StrategySpec::Parse(spec_text);
    if (!spec.ok()) {
      std::fprintf(stderr, "alloc_touch_bench: '%s': %s\n", spec_text.c_str(),
                   std::string(spec.status().message()).c_str());
      std::exit(2);
    }
    auto p = pool::Pool::Create(c, *spec);
    if (!p.ok()) std::abort();
    p_ = std::move(*p);
    const size_t bytes = (p_->MemSize(kObjects) + 4095) & ~size_t{4095};
    mem_ = static_cast<char*>(std::aligned_alloc(4096, bytes));
    std::memset(mem_, 0, bytes);
    if (!p_->Populate(mem_, bytes, kObjects, [](void*) {}).ok()) std::abort();
    if (!p_->RegisterWorker(0, {{.port = 0, .ring_size = 512}}).ok()) std::abort();
    p_->SetRxPort(0, 0);
  }
  ~PoolAlloc() {
    p_.reset();
    std::free(mem_);
  }
  bool Get(void** objs, unsigned n) { return p_->Get(0, objs, n); }
  void Put(void* const* objs, unsigned n) { p_->Put(0, objs, n); }
  std::unique_ptr<pool::Pool> p_;
  char* mem_ = nullptr;
};

struct MallocAlloc {
  bool Get(void** objs, unsigned n) {
    for (unsigned i = 0; i < n; ++i) {
      objs[i] = std::malloc(kEltSize);
      if (objs[i] == nullptr) return false;
    }
    return true;
  }
  void Put(void* const* objs, unsigned n) {
    for (unsigned i = 0; i < n; ++i) std::free(objs[i]);
  }
};

struct Impl {
  std::string name;
  std::unique_ptr<PoolAlloc> pool;
  MallocAlloc malloc_alloc;
  LoopResult Run(unsigned n, unsigned inflight, double ms, uint64_t bursts) {
    if (name == "rte_mempool") return DpdkRunLoop(n, inflight, ms, bursts);
    if (name == "malloc") return RunLoop(malloc_alloc, n, inflight, ms, bursts);
    return RunLoop(*pool, n, inflight, ms, bursts);
  }
};

std::string Flag(int argc, char** argv, const char* name, const char* def) {
  const std::string pre = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], pre.c_str(), pre.size()) == 0) return argv[i] + pre.size();
  }
  return def;
}

int Main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    static const char* const kKnown[] = {
        "--a=",      "--b=",        "--burst=",       "--pairs=", "--ms=",
        "--bursts=", "--inflight=", "--file-prefix=", "--no-huge"};
    bool ok = false;
    for (const char* k : kKnown) ok |= std::strncmp(argv[i], k, std::strlen(k)) == 0;
    if (!ok) {
      std::fprintf(stderr,
                   "alloc_touch_bench: unknown argument '%s'; write --a=IMPL --b=IMPL "
                   "[--burst=N] [--pairs=N] [--ms=MS | --bursts=N] [--inflight=N] "
                   "[--file-prefix=P] [--no-huge] (IMPL: a strategy spec, rte_mempool or malloc)\n",
                   argv[i]);
      return 2;
    }
  }
  const std::string a = Flag(argc, argv, "a", "rte_mempool");
  const std::string b = Flag(argc, argv, "b", "magazine");
  const long burst = std::atol(Flag(argc, argv, "burst", "32").c_str());
  const long pairs = std::atol(Flag(argc, argv, "pairs", "10").c_str());
  const double ms = std::atof(Flag(argc, argv, "ms", "200").c_str());
  const long long bursts = std::atoll(Flag(argc, argv, "bursts", "0").c_str());
  const long inflight = std::atol(Flag(argc, argv, "inflight", "512").c_str());
  if (burst < 1 || burst > static_cast<long>(kMaxBurst) || pairs < 1 || ms <= 0 || bursts < 0 ||
      inflight < burst || inflight > 4096) {
    std::fprintf(stderr,
                 "alloc_touch_bench: --burst in 1..%u, --pairs >= 1, --ms > 0, "
                 "--inflight in burst..4096\n",
                 kMaxBurst);
    return 2;
  }
  Impl impls[2];
  impls[0].name = a;
  impls[1].name = b;
  if (a == "rte_mempool" || b == "rte_mempool") {
    const std::string prefix =
        Flag(argc, argv, "file-prefix", ("alloc-touch-" + std::to_string(getpid())).c_str());
    bool no_huge = false;
    for (int i = 1; i < argc; ++i) no_huge |= std::strcmp(argv[i], "--no-huge") == 0;
    const std::string err = DpdkInit(prefix, no_huge, kObjects, kEltSize, kDpdkCache);
    if (!err.empty()) {
      std::fprintf(stderr, "alloc_touch_bench: %s\n", err.c_str());
      return 1;
    }
  }
  for (Impl& im : impls) {
    if (im.name != "rte_mempool" && im.name != "malloc" && !im.pool) {
      im.pool = std::make_unique<PoolAlloc>(im.name);
    }
  }
  const unsigned n = static_cast<unsigned>(burst);
  // Warm-up: both allocators reach their steady state (caches filled, pages touched).
  // With --bursts the warm-up is counted in bursts too, so a callgrind count is exact.
  for (Impl& im : impls) {
    im.Run(n, static_cast<unsigned>(inflight), 20, static_cast<uint64_t>(bursts));
  }
  std::printf("# pair,slot,role,ns_per_object,objects  (A=%s B=%s burst=%u inflight=%ld)\n",
              a.c_str(), b.c_str(), n, inflight);
  for (long p = 0; p < pairs; ++p) {
    for (int slot = 0; slot < 2; ++slot) {
      const int which = (p % 2 == 0) ? slot : 1 - slot;
      LoopResult r =
          impls[which].Run(n, static_cast<unsigned>(inflight), ms, static_cast<uint64_t>(bursts));
      std::printf("%ld,%d,%s,%.4f,%llu\n", p, slot, which == 0 ? "A" : "B", r.ns_per_object,
                  static_cast<unsigned long long>(r.objects));
      std::fflush(stdout);
    }
  }
  for (Impl& im : impls) im.pool.reset();
  if (a == "rte_mempool" || b == "rte_mempool") DpdkFini();
  return 0;
}

}  // namespace
}  // namespace skbnf::bench

int main(int argc, char** argv) { return skbnf::bench::Main(argc, argv); }
