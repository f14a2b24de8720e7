// Pool: a slab store, a hot-swappable strategy (stack of per-core layers) over it, and the
// quiescence protocol that swaps strategies while workers run.
//
// Threads
//   worker   a registered core (0 <= core < kMaxCores). Calls Get/Put with its core id and
//            Quiesce(core) at the top of its poll loop. Only it writes its CoreSlot.
//   other    any other thread: Get/Put with kNoCore (or an unregistered core id) go straight
//            to the store under its lock, so they are always correct.
//   control  one thread at a time (serialised inside) calls Swap/Pause/Resume/Register/Audit.
//
// Hot swap (epoch protocol)
//   1. Control builds generation G(e+1) (spec, compiled get/put, its own depot) and publishes
//      it as current, then writes word = (e+1) << 2 | pause into each registered core's slot.
//   2. A worker's Quiesce() does one acquire load of its own word per loop iteration. When the
//      word changed it flushes its layers down to the store (under the hazard of the
//      generation it ran), takes G(e+1) under a hazard pointer, configures its layers for it
//      and acknowledges e+1.
//   3. Control waits for every running worker's acknowledgement until a deadline. Parked
//      (paused) workers are switched by control on their behalf. If a worker does not answer
//      in time the swap fails: control publishes the old spec again as G(e+2) (roll back),
//      waits for the workers that do answer, and reports the core that did not. Mixed
//      generations across cores are safe at any moment: per-core state is private and the
//      shared parts (depots, store) are locked.
//   4. Generations no worker holds a hazard on are retired: their depot is drained into the
//      store and freed.
//
// No stranded objects. Per-core layers hold free objects only their core can take. A Get that
// the caller's layers, the depots and the store cannot serve reclaims, before it fails:
//   1. the caller's own layers (all of them: recycle lists of other RX ports, lcache, ...) go
//      to the store; every depot's full magazines go to the store;
//   2. workers with a quiescent point (RegisterWorker) are asked: the reclaim bit in their word
//      makes them flush their layers (and the host's cache, via the adopt hook) at their next
//      Quiesce. The reclaimer waits up to PoolConfig::reclaim_wait for each to serve it. Parked
//      and unregistered workers hold nothing (they flushed when they parked / left). While it
//      waits, a reclaiming worker serves requests addressed to itself, so two workers that
//      fail at once do not wait for each other;
//   3. foreign owners (RegisterForeignCore: lcores of an application that has no quiescent
//      point, e.g. any DPDK app loading the plugin) are robbed directly. Each of their
//      operations (ForeignGet/ForeignPut) marks its slot with a plain store to `in_op` and then
//      reads `steal`; the reclaimer sets `steal`, issues membarrier(2)
//      MEMBARRIER_CMD_PRIVATE_EXPEDITED (a full barrier on every running thread of the process,
//      the asymmetric fence of userspace RCU and tcmalloc) and then reads `in_op`: either the
//      owner sees `steal` and waits, or the reclaimer sees the owner inside its operation and
//      waits for it to end (one operation: nanoseconds). Busy, idle or gone owners alike. Where
//      membarrier(2) is unavailable (an old kernel, a seccomp profile), owners use a full fence
//      per operation instead (PoolConfig::asymmetric_fence = false forces that).
// The fast paths pay nothing for 2 (the word is the load Quiesce already does) and two plain
// stores and a load per operation for 3 (foreign owners only; skbnfd's workers never do it).
// Bound: after a reclaim, every object that was free in the pool when the Get began is
// reachable to it except (a) those held by a quiescent-point worker that did not reach its
// quiescent point within reclaim_wait (counted in reclaim_timeouts(); the request stays
// raised, so it flushes at its next Quiesce: unreachable for at most one poll-loop iteration
// of that worker) and (b) the at most n objects each concurrent operation is moving at that
// instant (unreachable for the length of that operation).
//
// Conservation: populated == in store + in per-core layers + in depots + in flight, exact
// whenever no Get/Put runs concurrently (workers parked or stopped). Audit() checks it.
//
// Debug switch (PoolConfig::debug, off by default): every object carries a state byte (in the
// pool / handed out). A Put of a foreign pointer or of an object already in the pool is
// counted and dropped before it reaches any layer, so state is never corrupted.
//
// Locks: control_mu_ serialises control (held through a swap's quiesce and roll back);
// gen_mu_ guards the list of live generations (held briefly). Readers (stats, gauges,
// in_depots, get_count) and reclaimers never take control_mu_.
#ifndef SKBNF_DATAPLANE_POOL_POOL_H_
#define SKBNF_DATAPLANE_POOL_POOL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataplane/pool/core_slot.h"
#include "dataplane/pool/headpool.h"
#include "dataplane/pool/slab_store.h"
#include "dataplane/pool/strategy_spec.h"

namespace skbnf::pool {

// Called by whichever thread changes what `core` runs — the worker itself at its quiescent
// point, or control on behalf of a parked worker — before the core's layers are flushed: at a
// swap (`next` is the new spec), at a pause and a reclaim (`next` is the current one), at
// unregistration (`next` is `slab`: no layers from then on); and at registration, before the
// core's thread uses the pool (`next` is the current spec, nothing to flush).
// A host that keeps a cache of its own in front of the pool (DPDK's lcore cache playing the
// `lcache` layer) flushes it into the pool with Put(core, ...) here and resizes it for `next`.
using AdoptHookFn = void (*)(void* ctx, int core, const StrategySpec& next);

// Test-only interleaving points (nullptr in production): see pool_test.cc's adopt race test.
struct PoolTestHooks {
  // Worker: the generation being adopted (`epoch`) is validated under hazard_next.
  void (*adopt_validated)(void* ctx, int core, uint64_t epoch) = nullptr;
  // Worker: hazard == the new generation and hazard_next cleared, before Configure.
  void (*adopt_published)(void* ctx, int core, uint64_t epoch) = nullptr;
  // Control, retiring generation `epoch`: between its two hazard reads of `core`'s slot.
  void (*retire_between_reads)(void* ctx, int core, uint64_t epoch) = nullptr;
  void* ctx = nullptr;
};

struct PoolConfig {
  std::string name = "skbnf";
  SlabStoreConfig store;
  bool debug = false;
  // The host implements the `lcache` layer in front of the pool (DPDK's own lcore cache); the
  // pool's stacks then leave it out, for every spec HostsLcache() accepts (the others keep the
  // pool's own lcache layer). Needs adopt_hook. The host reaches the pool below its cache with
  // HostGet/HostPut (not counted as the core's allocs/frees) and counts what its cache hands
  // out and takes back with CountHostLcache.
  bool host_lcache = false;
  AdoptHookFn adopt_hook = nullptr;
  void* adopt_ctx = nullptr;
  // Host's recycle check (see recycle.h). Without one, nothing is recycled.
  RecycleClassifyFn classify = nullptr;
  void* classify_ctx = nullptr;
  // Default deadline for a worker to acknowledge a swap or a pause.
  std::chrono::microseconds quiesce_timeout{std::chrono::milliseconds(200)};
  // How long a failing Get waits for busy workers to serve its reclaim request.
  std::chrono::microseconds reclaim_wait{std::chrono::milliseconds(1)};
  // Foreign owners: membarrier(2) on the reclaimer's side (true, when the kernel has it) or a
  // full fence in every operation of the owner (false).
  bool asymmetric_fence = true;
  PoolTestHooks test_hooks;
};

struct RxPort {
  int port = 0;
  uint32_t ring_size = 0;  // default recycle limit for this port
};

// A strategy generation. Immutable after publication except its depot.
class Generation {
 public:
  uint64_t epoch = 0;
  StrategySpec spec;
  GetFn get = nullptr;
  PutFn put = nullptr;
  std::unique_ptr<Depot> depot;  // when spec has the magazine layer
};

struct CoreSwapResult {
  int core = 0;
  bool on_behalf = false;  // parked: control switched it
  bool acknowledged = false;
  uint64_t quiesce_ns = 0;  // publish -> acknowledgement seen by control
  uint64_t objects_flushed = 0;
};

struct SwapReport {
  absl::Status status;  // OK, or why the swap failed (then rolled_back says what was done)
  std::string old_spec;
  std::string new_spec;
  uint64_t epoch = 0;  // epoch in force after the call
  bool rolled_back = false;
  std::vector<int> failed_cores;
  std::vector<CoreSwapResult> cores;
  uint64_t total_ns = 0;
  uint64_t depot_drained = 0;  // objects moved from retired depots to the store
};

struct LayerGauges {
  uint64_t objects[kNumLayers] = {};
};

struct AuditReport {
  bool ok = false;
  uint64_t populated = 0;
  uint64_t in_store = 0;
  uint64_t in_layers[kNumLayers] = {};  // per-core layer state (magazines: loaded + previous)
  uint64_t in_depots = 0;               // full magazines in every live depot
  uint64_t in_flight = 0;               // as the host said
  uint64_t handed_out = 0;              // allocs - frees, from the counters
  uint64_t double_frees = 0;            // debug switch
  uint64_t foreign_frees = 0;           // debug switch
  std::string message;
};

class Pool {
 public:
  static absl::StatusOr<std::unique_ptr<Pool>> Create(const PoolConfig& config,
                                                      const StrategySpec& initial);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // ---- memory (before concurrent use)
  size_t MemSize(uint32_t n) const { return store_->MemSize(n); }
  absl::StatusOr<uint32_t> Populate(void* base, size_t len, uint32_t max_objs,
                                    absl::FunctionRef<void(void*)> on_object);

  // ---- packet path
  // Takes exactly n objects or none. A failed Get hands out nothing; objects it pulled up from
  // a lower layer may stay in the upper one (still in the pool, still reachable).
  // A Get that cannot be served reclaims stranded objects before it fails (see above).
  bool Get(int core, void** objs, unsigned n) {
    CoreSlot& s = SlotFor(core);
    return __builtin_expect(TryGet(s, objs, n), 1) || GetAfterReclaim(s, objs, n);
  }
  void Put(int core, void* const* objs, unsigned n) { PutTo(SlotFor(core), objs, n); }
  // host_lcache: the host's cache on `core` (its own thread, or control for a parked worker)
  // refilling from / flushing into the layers below it. The layers count as always; the core's
  // allocs/frees do not (the cache has not handed anything to the host yet): CountHostLcache
  // counts those when the host knows what its cache handed out and took back.
  bool HostGet(int core, void** objs, unsigned n) {
    CoreSlot& s = SlotFor(core);
    return __builtin_expect(s.get(shared_, s, objs, n), 1) ||
           GetAfterReclaim(s, objs, n, /*count_allocs=*/false);
  }
  void HostPut(int core, void* const* objs, unsigned n) {
    CoreSlot& s = SlotFor(core);
    if (n != 0) s.put(shared_, s, objs, n);
  }
  // The host's count for its cache on `core` (its own thread): `gets` objects handed to it and
  // `puts` taken back, of which `get_misses` came from a refill (the part of a request the
  // cache did not hold) or straight from below, and `put_bypass` went straight below. The
  // cache's refills, flushes and transfers (alloc_misses, free_misses, bulk) the host counts
  // itself in HostLcacheCounters as they happen.
  void CountHostLcache(int core, uint64_t gets, uint64_t puts, uint64_t get_misses,
                       uint64_t put_bypass) {
    CoreCounters& c = slots_[core].counters;
    LayerCounters& l = c.layer[static_cast<int>(Layer::kLcache)];
    c.allocs.Add(gets);
    c.frees.Add(puts);
    l.alloc_hits.Add(gets - (get_misses < gets ? get_misses : gets));
    l.free_hits.Add(puts - (put_bypass < puts ? put_bypass : puts));
  }
  LayerCounters& HostLcacheCounters(int core) {
    return slots_[core].counters.layer[static_cast<int>(Layer::kLcache)];
  }
  // Whether the host's cache plays `spec`'s lcache layer: host_lcache, no debug switch (it
  // checks every object at the pool's boundary), a size DPDK's cache array holds
  // (kLcacheMaxBurst) and no prefetch (the pool prefetches what it hands out; the host's cache
  // hands out most objects). Otherwise the pool's own lcache layer runs.
  bool HostsLcache(const StrategySpec& spec) const {
    return config_.host_lcache && !debug_ && spec.Has(Layer::kLcache) &&
           spec.lcache_size <= kLcacheMaxBurst && !spec.prefetch;
  }
  // The same for a foreign owner (RegisterForeignCore): each call is marked so that a
  // reclaimer can take the slot's objects whenever the owner is outside one.
  bool ForeignGet(int core, void** objs, unsigned n) {
    return ForeignGetOn(SlotFor(core), objs, n);
  }
  // The same on a slot from ForeignFastSlot.
  bool ForeignGetOn(CoreSlot& s, void** objs, unsigned n) {
    Enter(s);
    const bool ok = TryGet(s, objs, n);
    Exit(s);
    return __builtin_expect(ok, 1) || GetAfterReclaim(s, objs, n);
  }
  void ForeignPut(int core, void* const* objs, unsigned n) {
    CoreSlot& s = SlotFor(core);
    Enter(s);
    PutTo(s, objs, n);
    Exit(s);
  }
  // The single-object hit of the top layer, inline and without the chain's indirect call, for
  // hosts that free one object per call (DPDK's net_null, PMDs' TX completion without fast
  // free): true when it was served (counted as Put/Get count it); false when nothing happened
  // and the caller must take Put/Get (or the Foreign pair). The slot's `fast` is kNone for
  // threads that are not owners, with the debug switch, and when the top layer has no such hit.
  // Recycle's free needs the object's RX port: `port_of(obj)` is the host's recycle check
  // inlined (what Shared::classify does for one object: the RX port, or -1), so that this
  // stays call-free and its caller needs no stack frame. Hosts without an inline check pass
  // NoRecycleCheck: recycle then takes Put.
  struct NoRecycleCheck {
    int operator()(const void*) const { return -1; }
  };
  template <class PortOf = NoRecycleCheck>
  bool PutOneFast(int core, void* obj, const PortOf& port_of = PortOf()) {
    CoreSlot& s = SlotFor(core);
    const FastPath k = s.fast;
    // One compare per kind, the head pool's first (a range test and then a dispatch cost 6).
    if (k == FastPath::kHeadPool) return PutOneStack(s, FastPath::kHeadPool, obj);
    if (k == FastPath::kMagazine) return PutOneStack(s, FastPath::kMagazine, obj);
    if (k != FastPath::kRecycle) return false;
    const int port = port_of(obj);
    return port >= 0 && port < kMaxPorts && PutOneRecycleTo(s, port, obj);
  }
  bool GetOneFast(int core, void** obj) {
    CoreSlot& s = SlotFor(core);
    return s.fast != FastPath::kNone && GetOne(s, obj);
  }
  // The foreign single-object pair, on a slot from ForeignFastSlot (the plugin's per-thread
  // cache). It never waits: when a reclaimer is at work it backs off and the caller takes the
  // full path, whose Enter waits. So it makes no call and needs no stack frame either.
  template <FastPath K>
  static bool ForeignPutStack(CoreSlot& s, void* obj) {
    if (!TryEnter(s)) return false;
    const bool ok = PutOneStack(s, K, obj);
    Exit(s);
    return ok;
  }
  static bool ForeignGetOneOn(CoreSlot& s, void** obj) {
    if (!TryEnter(s)) return false;
    const bool ok = GetOne(s, obj);
    Exit(s);
    return ok;
  }
  // A burst from a foreign owner's hot list, inline (the plugin, on a cached slot whose fast
  // path is kHeadPool): exactly what ForeignGetOn does when the hot list holds the whole
  // request, without the chain's indirect call. false, with nothing done, when it does not or
  // while a reclaimer is at work: then take ForeignGetOn.
  static bool ForeignHotListGet(CoreSlot& s, void** objs, unsigned n) {
    if (!TryEnter(s)) return false;
    const bool hit = HeadPool::GetFromHotList(s, objs, n);
    if (__builtin_expect(hit, 1)) {
      s.counters.allocs.Add(n);
      if (__builtin_expect(s.fast_prefetch, 0)) {
        for (unsigned i = 0; i < n; ++i) __builtin_prefetch(objs[i], 1, 3);
      }
    }
    Exit(s);
    return hit;
  }
  // For a host that caches its thread's slot (the plugin, per thread): `core`'s slot if it is
  // a registered foreign owner whose top layer has a single-object hit, with that hit's kind;
  // nullptr otherwise. A foreign owner's strategy is fixed while it is registered (Swap and
  // PauseWorker refuse, and nothing unregisters it before the pool is destroyed), so the
  // answer holds for the pool's lifetime. Use it with ForeignPutStack<kind>/ForeignGetOneOn.
  CoreSlot* ForeignFastSlot(int core, FastPath* kind) {
    if (static_cast<unsigned>(core) >= kMaxCores) return nullptr;
    CoreSlot& s = slots_[core];
    if (!Owned(s) || !s.foreign || s.fast == FastPath::kNone || s.fast == FastPath::kRecycle) {
      return nullptr;
    }
    *kind = s.fast;
    return &s;
  }
  // The RX port the worker is about to refill (recycle). -1: none.
  void SetRxPort(int core, int port) { slots_[core].rx_port = port; }

  // Top of a worker's poll loop. Returns false while the worker is paused (skip the
  // iteration; do not touch the pool on this core).
  bool Quiesce(int core) {
    CoreSlot& s = slots_[core];
    uint64_t w = s.word.load(std::memory_order_acquire);
    if (__builtin_expect(w == s.local_word, 1)) return true;
    return QuiesceSlow(s, w);
  }

  // ---- control
  // Makes `core` a worker (before its thread uses the pool) with the RX ports it refills.
  absl::Status RegisterWorker(int core, const std::vector<RxPort>& rx_ports = {});
  // Makes `core` a foreign owner: a core with layers but no quiescent point, which uses
  // ForeignGet/ForeignPut only (the plugin's lcores). Its strategy is fixed: Swap and
  // PauseWorker refuse while a foreign owner is registered. Call from the core's own thread.
  absl::Status RegisterForeignCore(int core);
  // Flushes the worker's layers to the store and makes it an "other" thread again. Call from
  // the worker itself, or from control once the worker thread has stopped using the pool.
  // When the last worker leaves, the depots are drained too: everything is back in the store.
  absl::Status UnregisterWorker(int core);
  // Moves every full magazine of every depot into the store. Safe at any time (workers then
  // find the depot empty and go to the store). Returns the objects moved.
  uint64_t DrainDepots();

  // FailedPrecondition (nothing changed) while a foreign owner is registered.
  SwapReport Swap(const StrategySpec& spec);
  SwapReport Swap(const StrategySpec& spec, std::chrono::microseconds timeout);

  // Pause: the worker flushes its layers and parks at its next quiescent point.
  absl::Status PauseWorker(int core);
  absl::Status PauseWorker(int core, std::chrono::microseconds timeout);
  // Returns once the worker has left its parked state (DeadlineExceeded if it does not reach
  // its quiescent point in time; it then resumes whenever it does).
  absl::Status ResumeWorker(int core);
  absl::Status ResumeWorker(int core, std::chrono::microseconds timeout);
  bool IsParked(int core) const;

  // Conservation audit; exact when nothing runs Get/Put concurrently.
  AuditReport Audit(uint64_t in_flight);

  // ---- reading (any thread, any time)
  StrategySpec strategy() const;
  uint64_t epoch() const;
  std::vector<int> workers() const;
  bool debug() const { return debug_; }
  const PoolConfig& config() const { return config_; }
  SlabStore& store() { return *store_; }
  uint64_t populated() const { return store_->populated(); }
  uint64_t in_store() const { return store_->free_count(); }
  uint64_t in_depots() const;
  // Objects held by `core`'s layers (approximate while it runs).
  LayerGauges CoreGauges(int core) const;
  CoreCountersSnapshot CoreStats(int core) const;  // kNoCore: the "other threads" slot
  uint64_t double_frees() const { return double_frees_.load(std::memory_order_relaxed); }
  uint64_t foreign_frees() const { return foreign_frees_.load(std::memory_order_relaxed); }
  uint64_t swaps_ok() const { return swaps_ok_.load(std::memory_order_relaxed); }
  uint64_t swaps_failed() const { return swaps_failed_.load(std::memory_order_relaxed); }
  // Get calls that reclaimed; requests not served within reclaim_wait; objects the
  // reclaimers moved themselves (workers that served a request count their own flush).
  uint64_t reclaims() const { return reclaims_.load(std::memory_order_relaxed); }
  uint64_t reclaim_timeouts() const { return reclaim_timeouts_.load(std::memory_order_relaxed); }
  uint64_t reclaimed_objects() const { return reclaimed_.load(std::memory_order_relaxed); }
  // Epochs of the generations still alive (current and any a core may still hold).
  std::vector<uint64_t> LiveEpochs() const;

 private:
  Pool(const PoolConfig& config, std::unique_ptr<SlabStore> store);

  CoreSlot& SlotFor(int core) {
    return static_cast<unsigned>(core) < kMaxCores ? slots_[core] : other_;
  }
  static bool Owned(const CoreSlot& s) { return s.registered.load(std::memory_order_relaxed); }
  // The layers' answer, without reclaim: the inline single-object hit, or the chain.
  bool TryGet(CoreSlot& s, void** objs, unsigned n) {
    if (n == 1 && s.fast != FastPath::kNone && GetOne(s, objs)) return true;
    if (__builtin_expect(!s.get(shared_, s, objs, n), 0)) return false;
    CountAllocs(s, objs, n);
    return true;
  }
  void PutTo(CoreSlot& s, void* const* objs, unsigned n) {
    if (__builtin_expect(debug_, 0)) return DebugPut(s, objs, n);
    if (n == 1 && s.fast != FastPath::kNone && PutOne(shared_, s, objs[0])) return;
    if (Owned(s))
      s.counters.frees.Add(n);
    else
      s.counters.frees.AtomicAdd(n);
    s.put(shared_, s, objs, n);
  }
  void CountAllocs(CoreSlot& s, void* const* objs, unsigned n) {
    if (Owned(s))
      s.counters.allocs.Add(n);
    else
      s.counters.allocs.AtomicAdd(n);
    if (__builtin_expect(debug_, 0)) MarkHandedOut(objs, n);
  }
  // Foreign owners' operation marks (see "No stranded objects"). Where membarrier(2) is
  // missing, registration sets kStrongBit in `steal` for good: every Enter then takes the
  // slow path, which uses a full barrier, and the fast path carries no mode test.
  static constexpr uint8_t kStealBit = 1;
  static constexpr uint8_t kStrongBit = 2;
  void Enter(CoreSlot& s) {
    s.in_op.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // membarrier does the rest
    if (__builtin_expect(StealRaised(s), 0)) EnterSlow(s);
  }
  // `steal != 0`, read after the in_op store (a seq_cst load: on x86 a plain load, ordered
  // after the store by the reclaimer's membarrier). On x86-64 one `cmpb` to memory: GCC loads
  // an atomic byte and then tests it (two), and this sits on every foreign operation. Under
  // ThreadSanitizer, which does not see inline assembly, and elsewhere: the atomic load.
  static bool StealRaised(CoreSlot& s) {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !SKBNF_TSAN_BUILD
    bool raised;
    asm volatile("cmpb $0, %1" : "=@ccne"(raised) : "m"(s.steal) : "memory");
    return raised;
#else
    return s.steal.load(std::memory_order_seq_cst) != 0;
#endif
  }
  static void Exit(CoreSlot& s) { s.in_op.store(0, std::memory_order_release); }
  // Enter without waiting: false (and not inside) while a reclaimer holds `steal`, or always
  // in the strong-fence mode; the caller then takes the full path, whose Enter waits.
  static bool TryEnter(CoreSlot& s) {
    s.in_op.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // membarrier does the rest
    if (__builtin_expect(StealRaised(s), 0)) {
      Exit(s);
      return false;
    }
    return true;
  }
  void EnterSlow(CoreSlot& s);
  // Reclaims stranded objects (see above), then retries the Get once.
  bool GetAfterReclaim(CoreSlot& s, void** objs, unsigned n, bool count_allocs = true);
  void Reclaim(CoreSlot& self);
  // A worker's answer to a reclaim request: the host's cache and its layers to the store.
  void ServeReclaim(CoreSlot& s);
  // Writes epoch and pause into the slot's word, keeping a raised reclaim bit.
  void PublishWord(CoreSlot& s, uint64_t epoch);
  // Back to an "other" slot: no layers, no fast path, no RX ports.
  void ResetSlot(CoreSlot& s);
  bool HasForeignOwner() const;
  absl::Status RegisterLocked(int core, const uint32_t (&rings)[kMaxPorts], bool foreign);
  // Single-object hits of the top layer (recycle: the RX port's list; magazine: the loaded
  // magazine; headpool: the hot list),
  // exactly what the layer's burst code does for n = 1 when it hits. false: take the full path.
  static bool GetOne(CoreSlot& s, void** obj) {
    if (s.fast == FastPath::kHeadPool) {
      const uint32_t cnt = s.hot_count.get();
      if (cnt == 0) return false;
      *obj = s.hot[cnt - 1];
      s.hot_count.set(cnt - 1);
      s.counters.layer[static_cast<int>(Layer::kHeadPool)].fast_alloc_hits.Add(1);
    } else if (s.fast == FastPath::kMagazine) {
      Magazine* ld = s.loaded;
      if (ld->rounds == 0) return false;
      *obj = ld->objs[--ld->rounds];
      s.mag_objects.set(s.mag_objects.get() - 1);
      s.counters.layer[static_cast<int>(Layer::kMagazine)].fast_alloc_hits.Add(1);
    } else {
      if (s.rx_port < 0) return false;
      RecycleList& l = s.recycle[s.rx_port];
      const uint32_t cnt = l.count.get();
      if (cnt == 0) return false;
      *obj = l.objs[cnt - 1];
      l.count.set(cnt - 1);
      s.recycle_total.set(s.recycle_total.get() - 1);
      s.counters.layer[static_cast<int>(Layer::kRecycle)].fast_alloc_hits.Add(1);
    }
    if (s.fast_prefetch) __builtin_prefetch(*obj, 1, 3);
    return true;  // (the hit counts as one of the core's allocs too: see fast_alloc_hits)
  }
  static bool PutOne(const Shared& sh, CoreSlot& s, void* obj) {
    if (s.fast == FastPath::kRecycle) return PutOneRecycle(sh, s, obj);  // out of line
    return PutOneStack(s, s.fast, obj);
  }
  // PutOne for the hot list (kHeadPool) or the loaded magazine (kMagazine).
  static bool PutOneStack(CoreSlot& s, FastPath k, void* obj) {
    if (k == FastPath::kHeadPool) {
      const uint32_t cnt = s.hot_count.get();
      if (cnt == s.hot_list_len) return false;
      // (The count first: GCC then makes cnt + 1 with one lea instead of a copy and an add.)
      s.hot_count.set(cnt + 1);
      s.hot[cnt] = obj;
      s.counters.layer[static_cast<int>(Layer::kHeadPool)].fast_free_hits.Add(1);
    } else {
      Magazine* ld = s.loaded;
      if (ld->rounds == ld->capacity) return false;
      ld->objs[ld->rounds++] = obj;
      s.mag_objects.set(s.mag_objects.get() + 1);
      s.counters.layer[static_cast<int>(Layer::kMagazine)].fast_free_hits.Add(1);
    }
    return true;  // (one of the core's frees too: see fast_free_hits)
  }
  // PutOne for the recycle layer (frees counted there too).
  [[gnu::noinline]] static bool PutOneRecycle(const Shared& sh, CoreSlot& s, void* obj);
  // Its hit, the object's RX port known (0 <= port < kMaxPorts).
  static bool PutOneRecycleTo(CoreSlot& s, int port, void* obj) {
    RecycleList& l = s.recycle[port];
    const uint32_t cnt = l.count.get();
    if (cnt >= l.limit) return false;  // (the full path classifies once more: rare)
    l.objs[cnt] = obj;
    l.count.set(cnt + 1);
    s.recycle_total.set(s.recycle_total.get() + 1);
    s.counters.layer[static_cast<int>(Layer::kRecycle)].fast_free_hits.Add(1);
    return true;
  }
  bool QuiesceSlow(CoreSlot& s, uint64_t w);
  // Flush `s`'s layers into the store and give its magazines back. Returns objects moved.
  uint64_t FlushSlot(CoreSlot& s);
  // Gives the slot's (emptied) magazines back to the depot they came from.
  void ReleaseMagazines(CoreSlot& s);
  // Flush, then take the current generation under a hazard and configure the layers for it.
  void Adopt(CoreSlot& s);
  void RunAdoptHook(CoreSlot& s, const StrategySpec& next);
  void Configure(CoreSlot& s, const Generation* g);
  uint32_t MagazinesNeeded(uint32_t magazine_size) const;
  std::unique_ptr<Generation> MakeGeneration(const StrategySpec& spec, uint64_t epoch);
  // A depot for `magazine_size` with MagazinesNeeded magazines: the spare one when its size
  // matches, else a new one. KeepSpareDepot replaces the spare (an emptied depot).
  std::unique_ptr<Depot> TakeDepot(uint32_t magazine_size);
  void KeepSpareDepot(std::unique_ptr<Depot> d);
  // Publishes a generation and waits for the workers; fills `report` for those cores.
  bool PublishAndWait(std::unique_ptr<Generation> g, std::chrono::microseconds timeout,
                      SwapReport& report, const std::vector<int>& skip);
  uint64_t RetireGenerations();
  uint64_t DrainGenerationDepots();  // takes gen_mu_ (not control_mu_): reclaimers use it too
  void FailedGet(CoreSlot& s);
  int CoreOfSlot(const CoreSlot& s) const { return static_cast<int>(&s - slots_); }
  void MarkHandedOut(void* const* objs, unsigned n);
  void DebugPut(CoreSlot& s, void* const* objs, unsigned n);
  uint64_t WordFor(const CoreSlot& s, uint64_t epoch) const;

  const PoolConfig config_;
  const bool debug_;
  const bool strong_enter_;  // foreign owners fence every operation (no membarrier)
  std::unique_ptr<SlabStore> store_;
  Shared shared_;
  std::unique_ptr<CoreSlot[]> slots_storage_;
  CoreSlot* slots_;
  CoreSlot other_;

  std::atomic<const Generation*> current_{nullptr};
  std::atomic<uint64_t> epoch_{0};
  mutable std::mutex info_mu_;  // guards current_spec_ (readers never wait for a swap)
  StrategySpec current_spec_;
  mutable std::mutex control_mu_;                        // serialises control operations
  mutable std::mutex gen_mu_;                            // generations_ (changed under both locks)
  std::deque<std::unique_ptr<Generation>> generations_;  // live ones, oldest first
  std::mutex spare_mu_;                                  // spare_depot_
  std::unique_ptr<Depot> spare_depot_;  // the last retired generation's depot, all empty
  bool pause_requested_[kMaxCores] = {};

  std::unique_ptr<std::atomic<uint8_t>[]> obj_state_;  // debug: 1 = handed out
  uint64_t obj_state_size_ = 0;
  std::atomic<uint64_t> double_frees_{0};
  std::atomic<uint64_t> foreign_frees_{0};
  std::atomic<uint64_t> swaps_ok_{0};
  std::atomic<uint64_t> swaps_failed_{0};
  std::atomic<uint64_t> reclaims_{0};
  std::atomic<uint64_t> reclaim_timeouts_{0};
  std::atomic<uint64_t> reclaimed_{0};
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_POOL_H_
