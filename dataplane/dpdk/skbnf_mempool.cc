// SPDX-License-Identifier: BSD-3-Clause
// The `skbnf` mempool ops driver, its common part: alloc, free, memory, populate, the ops
// table and CreatePktmbufPool. Each build links one per-thread slot cache besides
// (mempool_driver.h): slot_cache_skbnfd.cc or slot_cache_plugin.cc, which define the ops'
// enqueue and dequeue. See skbnf_mempool.h for the mapping and the two hosts.
#include "dataplane/dpdk/skbnf_mempool.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/mempool_driver.h"
#include "dataplane/dpdk/mempool_secondary.h"

namespace skbnf::dpdk {
namespace {

using driver::Driver;
using driver::DriverPool;
using pool::kMaxCores;

constexpr uint32_t kSlabBytes = 64 * 1024;  // slab size and alignment (see the header)

// What CreatePktmbufPool hands the ops through pool_config (checked by its magic: a foreign
// application passes nullptr, or something of its own).
struct ConfigBlock {
  static constexpr uint64_t kMagic = 0x736b626e66636667;  // "skbnfcfg"
  uint64_t magic = kMagic;
  MempoolOptions options;
  bool lcore_caches = false;  // the private area has room for DPDK's cache_size 0 and 1
  absl::Status error;         // why alloc failed
};

bool EnvFlag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

// A foreign application's pool (the plugin): SKBNF_STRATEGY, default magazine. The error names
// the variable and what to write.
absl::StatusOr<pool::StrategySpec> EnvStrategy(const rte_mempool* mp) {
  const char* s = std::getenv("SKBNF_STRATEGY");
  const std::string text = s != nullptr && s[0] != '\0' ? s : "magazine";
  absl::StatusOr<pool::StrategySpec> spec = pool::StrategySpec::Parse(text);
  if (spec.ok()) return spec;
  return absl::InvalidArgumentError(absl::StrCat(
      "skbnf mempool '", mp->name, "': bad strategy '", text, "': ", spec.status().message(),
      " (write e.g. SKBNF_STRATEGY=magazine or recycle+headpool)"));
}

MempoolOptions EnvOptions() {
  MempoolOptions o;
  o.colour = EnvFlag("SKBNF_COLOUR");
  o.debug = EnvFlag("SKBNF_DEBUG");
  if (const char* v = std::getenv("SKBNF_STORE_STRIDE");
      v != nullptr && v[0] != '\0' && !absl::SimpleAtoi(v, &o.store_stride)) {
    std::fprintf(stderr, "SKBNF_STORE_STRIDE='%s' is not a number of bytes (write e.g. 4096)\n", v);
    o.store_stride = 1;  // which the store refuses: the pool creation fails
  }
  return o;
}

ConfigBlock* HostConfig(const rte_mempool* mp) {
  auto* c = static_cast<ConfigBlock*>(mp->pool_config);
  return c != nullptr && c->magic == ConfigBlock::kMagic ? c : nullptr;
}

void Fail(rte_mempool* mp, absl::Status st) {
  std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
  if (ConfigBlock* c = HostConfig(mp)) c->error = std::move(st);
}

void ClassifyMbufs(void* ctx, void* const* objs, unsigned n, int16_t* ports) {
  const uint32_t min_len = static_cast<const DriverPool*>(ctx)->min_buf_len;
  for (unsigned i = 0; i < n; ++i) {
    ports[i] =
        static_cast<int16_t>(driver::RecyclePort(static_cast<const rte_mbuf*>(objs[i]), min_len));
  }
}

bool IsMbufPool(const rte_mempool* mp) {
  return mp->private_data_size >= sizeof(rte_pktmbuf_pool_private) &&
         mp->elt_size >= sizeof(rte_mbuf);
}

// The track modifier's stamp word in every mbuf of a skbnf pool (pool/track.h): an mbuf dynamic
// field, DPDK 22.11 lib/mbuf/rte_mbuf_dyn.h (struct rte_mbuf_dynfield {name, size, align, flags};
// rte_mbuf_dynfield_register returns the field's offset in the mbuf, the same one again for the
// same name and shape, or -1 with rte_errno). 8 of the mbuf's dynamic bytes, registered for
// every pool of packet mbufs whether it tracks or not, so that `track` can be swapped in later.
// The pool writes it whenever it hands the mbuf out; nothing else reads or writes it.
absl::StatusOr<uint32_t> StampField() {
  rte_mbuf_dynfield field{};
  std::snprintf(field.name, sizeof(field.name), "%s", "skbnf_dynfield_pool_stamp");
  field.size = sizeof(uint64_t);
  field.align = alignof(uint64_t);
  const int off = rte_mbuf_dynfield_register(&field);
  if (off <= 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "rte_mbuf_dynfield_register(skbnf_dynfield_pool_stamp): ", rte_strerror(rte_errno)));
  }
  return static_cast<uint32_t>(off);
}

// No quiescent point and nobody to register workers in a foreign application: every EAL lcore
// owns a slot from the start (lcores made later with rte_thread_register use the store
// directly). Fails only for a core out of range or already registered, neither possible on a
// fresh pool; should it ever, the pool is refused rather than run with a core short.
absl::Status RegisterForeignLcores(DriverPool& dp) {
  unsigned lc;
  RTE_LCORE_FOREACH(lc) {
    if (lc >= static_cast<unsigned>(kMaxCores)) continue;
    if (absl::Status st = dp.pool->RegisterForeignCore(static_cast<int>(lc)); !st.ok()) {
      return absl::InternalError(
          absl::StrCat("skbnf mempool '", dp.mp->name, "': lcore ", lc, ": ", st.message()));
    }
  }
  return absl::OkStatus();
}

pool::PoolConfig StoreConfig(const rte_mempool* mp, const MempoolOptions& opt) {
  const uint32_t elt = mp->header_size + mp->elt_size + mp->trailer_size;
  pool::PoolConfig cfg;
  cfg.name = mp->name;
  cfg.debug = opt.debug;
  cfg.store.elt_size = elt;
  cfg.store.handle_offset = mp->header_size;
  cfg.store.objs_per_slab = elt >= kSlabBytes ? 1 : kSlabBytes / elt;
  cfg.store.SetStride(opt.store_stride, kSlabBytes);
  cfg.store.slab_align = kSlabBytes;
  cfg.store.cache_line = RTE_CACHE_LINE_SIZE;
  cfg.store.colour = opt.colour;
  return cfg;
}

int OpAlloc(rte_mempool* mp) {
  const ConfigBlock* host = HostConfig(mp);
  const MempoolOptions opt = host != nullptr ? host->options : EnvOptions();
  // skbnfd's spec comes parsed (MempoolOptions::strategy); only the plugin's is text.
  absl::StatusOr<pool::StrategySpec> spec = host != nullptr ? opt.strategy : EnvStrategy(mp);
  if (!spec.ok()) {
    Fail(mp, spec.status());
    return -EINVAL;
  }
  auto dp = std::make_unique<DriverPool>();
  dp->mp = mp;
  dp->foreign = host == nullptr;
  pool::PoolConfig cfg = StoreConfig(mp, opt);
  if (IsMbufPool(mp)) {
    dp->min_buf_len = rte_pktmbuf_data_room_size(mp);
    cfg.classify = &ClassifyMbufs;
    cfg.classify_ctx = dp.get();
    // Without the field, `track` is refused (the pool says why); everything else runs.
    if (absl::StatusOr<uint32_t> off = StampField(); off.ok()) {
      cfg.stamp_offset = *off;
    } else if (spec->track) {
      Fail(mp, off.status());
      return -ENOSPC;
    }
  }
  driver::HostRequest req;
  req.skbnfd = host != nullptr;
  req.debug = opt.debug;
  req.lcore_caches = host != nullptr && host->lcore_caches && mp->cache_size == 0;
  driver::ConfigureHost(*dp, req, cfg);
  auto p = pool::Pool::Create(cfg, *spec);
  if (!p.ok()) {
    Fail(mp, absl::InvalidArgumentError(
                 absl::StrCat("skbnf mempool '", mp->name, "': ", p.status().message())));
    return -EINVAL;
  }
  dp->pool = std::move(*p);
  absl::Status started = driver::StartHost(*dp);
  if (started.ok() && dp->foreign) started = RegisterForeignLcores(*dp);
  if (!started.ok()) {
    const int rc = absl::IsResourceExhausted(started) ? -ENOMEM : -EINVAL;
    driver::StopHost(*dp);
    Fail(mp, std::move(started));
    return rc;
  }
  mp->pool_data = dp.release();
  return 0;
}

void OpFree(rte_mempool* mp) {
  if (DriverPool* dp = Driver(mp); dp != nullptr) {
    driver::StopHost(*dp);
    delete dp;
  }
  mp->pool_data = nullptr;
}

// In a secondary the Pool (mp->pool_data) is in the primary's heap: ask it (mempool_secondary.h).
unsigned OpGetCount(const rte_mempool* mp) {
  if (rte_eal_process_type() == RTE_PROC_SECONDARY) {
    return static_cast<unsigned>(SecondaryAvailable(mp));
  }
  return static_cast<unsigned>(CountsOf(mp).available);
}

ssize_t OpCalcMemSize(const rte_mempool* mp, uint32_t obj_num, uint32_t pg_shift,
                      size_t* min_chunk_size, size_t* align) {
  const pool::SlabStore& store = Driver(mp)->pool->store();
  const size_t mem = store.MemSize(obj_num) + kSlabBytes;
  *align = kSlabBytes;
  // Slabs start on kSlabBytes boundaries inside a chunk. On pages at least that big no object
  // crosses a page; on smaller pages (--no-huge: 4 KiB) ask for one IOVA-contiguous chunk.
  const bool small_pages = pg_shift != 0 && (size_t{1} << pg_shift) < kSlabBytes;
  *min_chunk_size = small_pages ? mem : store.slab_bytes() + kSlabBytes;
  return static_cast<ssize_t>(mem);
}

int OpPopulate(rte_mempool* mp, unsigned max_objs, void* vaddr, rte_iova_t iova, size_t len,
               rte_mempool_populate_obj_cb_t* obj_cb, void* obj_cb_arg) {
  DriverPool* dp = Driver(mp);
  const auto va = reinterpret_cast<uintptr_t>(vaddr);
  const uintptr_t start = (va + kSlabBytes - 1) & ~uintptr_t{kSlabBytes - 1};
  const uint32_t elt = mp->header_size + mp->elt_size + mp->trailer_size;
  if (start - va >= len || len - (start - va) < elt + RTE_CACHE_LINE_SIZE) return 0;
  // As rte_mempool_op_populate_helper: DPDK's per-object callback (mempool_add_elem: object
  // header, element list, populated_size) for each object, then the object is in the pool.
  auto placed = dp->pool->Populate(
      reinterpret_cast<void*>(start), len - (start - va), max_objs, [&](void* obj) {
        const uintptr_t off = reinterpret_cast<uintptr_t>(obj) - va;
        obj_cb(mp, obj_cb_arg, obj, iova == RTE_BAD_IOVA ? RTE_BAD_IOVA : iova + off);
      });
  if (!placed.ok()) {
    std::fprintf(stderr, "skbnf mempool '%s': populate: %s\n", mp->name,
                 std::string(placed.status().message()).c_str());
    return -EINVAL;
  }
  return static_cast<int>(*placed);
}

int OpGetInfo(const rte_mempool* mp, rte_mempool_info* info) {
  info->contig_block_size = 0;
  (void)mp;
  return 0;
}

// Constant-initialised, so that the plugin may register it from a load-time constructor
// (slot_cache_plugin.cc); skbnfd registers it at its first pool (slot_cache_skbnfd.cc).
const rte_mempool_ops g_ops = {
    .name = "skbnf",
    .alloc = &OpAlloc,
    .free = &OpFree,
    .enqueue = &driver::OpEnqueue,
    .dequeue = &driver::OpDequeue,
    .get_count = &OpGetCount,
    .calc_mem_size = &OpCalcMemSize,
    .populate = &OpPopulate,
    .get_info = &OpGetInfo,
    .dequeue_contig_blocks = nullptr,
};

}  // namespace

namespace driver {
const rte_mempool_ops& Ops() { return g_ops; }
}  // namespace driver

absl::StatusOr<rte_mempool*> CreatePktmbufPool(const std::string& name, uint32_t n,
                                               uint16_t data_room, int socket,
                                               const MempoolOptions& options) {
  if (absl::Status st = driver::EnsureOpsRegistered(); !st.ok()) return st;
  // As rte_pktmbuf_pool_create_by_ops (rte_mbuf.c), with the options as pool_config.
  rte_pktmbuf_pool_private priv = {};
  priv.mbuf_data_room_size = data_room;
  priv.mbuf_priv_size = 0;
  const unsigned elt_size = sizeof(rte_mbuf) + data_room;
  // DPDK's lcore caches playing the lcache layer (see the header), not with the debug switch.
  // The ops switch them on by setting mp->cache_size to 1 while a worker hosts, and DPDK finds
  // the mempool's private area (the mbuf pool's data room, which PMDs read) at an offset that
  // depends on cache_size: RTE_MEMPOOL_HEADER_SIZE(mp, 0) or (mp, 1), RTE_MAX_LCORE caches
  // apart. So the private area is made that much bigger and holds the pool's private data at
  // both offsets; the caches themselves live elsewhere (mp->local_cache, the ops' alloc).
  const bool lcore_caches = !options.debug;
  const size_t cache_area = sizeof(rte_mempool_cache) * RTE_MAX_LCORE;
  rte_mempool* mp = rte_mempool_create_empty(
      name.c_str(), n, elt_size, /*cache_size=*/0,
      sizeof(rte_pktmbuf_pool_private) + (lcore_caches ? cache_area : 0), socket, 0);
  if (mp == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create mempool '", name, "': ", rte_strerror(rte_errno)));
  }
  ConfigBlock cfg;
  cfg.options = options;
  cfg.lcore_caches = lcore_caches;
  if (int rc = rte_mempool_set_ops_byname(mp, kSkbnfOpsName, &cfg); rc != 0) {
    rte_mempool_free(mp);
    return absl::InternalError(
        absl::StrCat("mempool ops '", kSkbnfOpsName, "' not registered: ", rte_strerror(-rc)));
  }
  rte_pktmbuf_pool_init(mp, &priv);  // at RTE_MEMPOOL_HEADER_SIZE(mp, 0)
  if (lcore_caches) {
    std::memcpy(reinterpret_cast<char*>(mp) + RTE_MEMPOOL_HEADER_SIZE(mp, 1),
                rte_mempool_get_priv(mp), sizeof(rte_pktmbuf_pool_private));
  }
  const int rc = rte_mempool_populate_default(mp);  // calls OpAlloc, which reads cfg
  mp->pool_config = nullptr;                        // cfg does not outlive this call
  if (rc < 0) {
    absl::Status why =
        cfg.error.ok()
            ? absl::ResourceExhaustedError(absl::StrCat("cannot populate mempool '", name, "' (", n,
                                                        " mbufs): ", rte_strerror(-rc)))
            : cfg.error;
    rte_mempool_free(mp);
    return why;
  }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
  return mp;
}

pool::Pool* PoolOf(const rte_mempool* mp) {
  if (mp == nullptr || std::strcmp(rte_mempool_get_ops(mp->ops_index)->name, kSkbnfOpsName) != 0 ||
      mp->pool_data == nullptr) {
    return nullptr;
  }
  return Driver(mp)->pool.get();
}

MempoolCounts CountsOf(const rte_mempool* mp) {
  MempoolCounts c;
  pool::Pool* p = PoolOf(mp);
  if (p == nullptr) return c;
  c.populated = p->populated();
  uint64_t n = p->in_store() + p->in_depots();
  for (int core = 0; core < kMaxCores; ++core) {
    const pool::LayerGauges g = p->CoreGauges(core);
    for (uint64_t v : g.objects) n += v;
  }
  c.available = n;
  return c;
}

}  // namespace skbnf::dpdk
