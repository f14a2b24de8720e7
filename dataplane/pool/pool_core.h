// SPDX-License-Identifier: BSD-3-Clause
// PoolCore: the part of a Pool that does not depend on its layers — a slab store, the
// generations of a hot-swappable strategy over it, and the quiescence protocol that swaps
// strategies while workers run. BasicPool<Layers> (pool.h) adds the per-core layers (a
// compile-time list, layer.h) and the packet path; the protocol reaches the layers only through
// a handful of virtual functions called on the control side and in reclaim, never per packet.
//
// Files, by concern: pool_core.cc (construction, populate, readers), pool_swap.cc
// (generations, swap, pause/resume, quiescent point), pool_reclaim.cc (no stranded objects,
// membarrier), pool_register.cc (workers and foreign owners), pool_audit.cc (gauges, the
// conservation audit, the debug switch).
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
//      operations (Pool::Handle<kForeign>: Get/Put) marks its slot with a plain store to `in_op` and then
//      reads `steal`; the reclaimer sets `steal`, issues membarrier(2)
//      MEMBARRIER_CMD_PRIVATE_EXPEDITED (a full barrier on every running thread of the process,
//      the asymmetric fence of userspace RCU and tcmalloc) and then reads `in_op`: either the
//      owner sees `steal` and waits, or the reclaimer sees the owner inside its operation and
//      waits for it to end (one operation: nanoseconds). Busy, idle or gone owners alike. Where
//      membarrier(2) is unavailable (an old kernel, a seccomp profile), owners use a full fence
//      per operation instead (PoolConfig::asymmetric_fence = false forces that).
//      One operation takes no marks: the single-object free of a top layer with Steal
//      (layer.h, UnmarkedPutOne: the head pool; Pool::Handle<kForeign>::PutOneOf), which is per packet
//      with PMDs that free one mbuf per call. It only pushes, and publishes the push last;
//      the reclaimer takes that layer's objects with Steal, which writes only what the push
//      never touches (headpool.h: the list's base), so the two may overlap: a push the
//      reclaimer did not see stays in the layer, reachable to the next Get that reclaims.
// The fast paths pay nothing for 2 (the word is the load Quiesce already does) and two plain
// stores and a load per marked operation for 3 (foreign owners only; skbnfd's workers never do
// it).
// Bound: after a reclaim, every object that was free in the pool when the Get began is
// reachable to it except (a) those held by a quiescent-point worker that did not reach its
// quiescent point within reclaim_wait (counted in reclaim_timeouts(); the request stays
// raised, so it flushes at its next Quiesce: unreachable for at most one poll-loop iteration
// of that worker) and (b) the at most n objects each concurrent operation is moving at that
// instant (unreachable for the length of that operation; the one object of a foreign owner's
// unmarked free that overlaps the robbery stays in the owner's layer, where the next reclaim
// finds it).
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
#ifndef SKBNF_DATAPLANE_POOL_POOL_CORE_H_
#define SKBNF_DATAPLANE_POOL_POOL_CORE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataplane/pool/core_slot.h"
#include "dataplane/pool/depot.h"
#include "dataplane/pool/mutex.h"
#include "dataplane/pool/slab_store.h"
#include "dataplane/pool/strategy_spec.h"
#include "dataplane/pool/track.h"

namespace skbnf::pool {

// The layer a host's own cache may play (PoolConfig::host_lcache: DPDK's lcore cache standing
// in for the lcache layer, which follows it step for step); the host's counts for its cache
// go to this layer's counters.
inline constexpr Layer kHostedLayer = Layer::kLcache;

// Called by whichever thread changes what `core` runs — the worker itself at its quiescent
// point, or control on behalf of a parked worker — before the core's layers are flushed: at a
// swap (`next` is the new spec), at a pause and a reclaim (`next` is the current one), at
// unregistration (`next` is `slab`: no layers from then on); and at registration, before the
// core's thread uses the pool (`next` is the current spec, nothing to flush).
// A host that keeps a cache of its own in front of the pool (DPDK's lcore cache playing the
// `lcache` layer) flushes it into the pool with Put(core, ...) here and resizes it for `next`.
// A host that remembers a worker's fast-path kind (Pool::Handle<kWorker>::PutOneOf) forgets it here:
// every change of a registered worker's kind comes after this call (at registration, before the
// core's thread uses the pool).
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
  // its kHostCache handle (Pool::Handle<kHostCache>: not counted as the core's allocs/frees) and counts what its cache hands
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
  // The `track` modifier's stamp word (track.h): bytes from an object's handle to an 8-byte,
  // 8-aligned word of the object that the pool may write whenever it hands the object out (DPDK:
  // the mbuf dynamic field skbnf_dynfield_pool_stamp). 0: the host reserves none, and a spec
  // with `track` is refused.
  uint32_t stamp_offset = 0;
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
  uint64_t objects[kMaxLayers] = {};  // by kIndex
  uint64_t unlisted = 0;  // layers the spec cannot name (kUnlisted: a test's own layers)
};

struct AuditReport {
  bool ok = false;
  uint64_t populated = 0;
  uint64_t in_store = 0;
  uint64_t in_layers[kMaxLayers] = {};  // per-core layer state (magazines: loaded + previous)
  uint64_t in_unlisted_layers = 0;      // layers the spec cannot name (a test's own layers)
  uint64_t in_depots = 0;               // full magazines in every live depot
  uint64_t in_flight = 0;               // as the host said
  uint64_t handed_out = 0;              // allocs - frees, from the counters
  uint64_t double_frees = 0;            // debug switch
  uint64_t foreign_frees = 0;           // debug switch
  std::string message;
};

class PoolCore {
  friend struct PoolCoreTestPeer;  // tests/unit/test_peers.h: what only tests read

 public:
  virtual ~PoolCore();
  PoolCore(const PoolCore&) = delete;
  PoolCore& operator=(const PoolCore&) = delete;

  // ---- memory (before concurrent use)
  size_t MemSize(uint32_t n) const { return store_->MemSize(n); }
  absl::StatusOr<uint32_t> Populate(void* base, size_t len, uint32_t max_objs,
                                    absl::FunctionRef<void(void*)> on_object);

  // Whether the host's cache plays `spec`'s lcache layer: host_lcache, no debug switch (it
  // checks every object at the pool's boundary), a size DPDK's cache array holds
  // (kLcacheMaxBurst) and no modifier (the pool prefetches and stamps what it hands out; the
  // host's cache hands out most objects). Otherwise the pool's own lcache layer runs.
  bool HostsLcache(const StrategySpec& spec) const {
    return config_.host_lcache && !debug_ && spec.Has(kHostedLayer) &&
           spec.Tunable(kHostedLayer) <= kLcacheMaxBurst && ModsOf(spec) == 0;
  }

  // ---- control
  // Makes `core` a worker (before its thread uses the pool) with the RX ports it refills.
  absl::Status RegisterWorker(int core, const std::vector<RxPort>& rx_ports = {});
  // Makes `core` a foreign owner: a core with layers but no quiescent point, which uses
  // its kForeign handle only (the plugin's lcores). Its strategy is fixed: Swap and
  // PauseWorker refuse while a foreign owner is registered. Call from the core's own thread.
  absl::Status RegisterForeignCore(int core);
  // Flushes the worker's layers to the store and makes it an "other" thread again. Call from
  // the worker itself, or from control once the worker thread has stopped using the pool.
  // When the last worker leaves, the depots are drained too: everything is back in the store.
  absl::Status UnregisterWorker(int core);

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
  bool IsPaused(int core) const;

  // Conservation audit; exact when nothing runs Get/Put concurrently.
  AuditReport Audit(uint64_t in_flight);

  // The objects in flight and their stamps (track.h, "Census"): every per-core layer emptied
  // (workers get `wait` to flush at their quiescent point), then the store read. Control side;
  // FailedPrecondition while the strategy does not track.
  absl::StatusOr<InFlightCensus> Census(std::chrono::microseconds wait);
  // Whether `spec`'s modifiers fit the pool (track needs PoolConfig::stamp_offset).
  static absl::Status CheckModifiers(const PoolConfig& config, const StrategySpec& spec);

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
  // Tests only (skbnfd's --test-depot-hold-*): holds the current generation's depot lock for
  // `d`, as another core's exchange would; a core that exchanges a magazine meanwhile spins
  // (the depot_wait cause). false when the strategy has no depot.
  bool HoldDepotForTest(std::chrono::milliseconds d);
  // The TSC when `core`'s last depot lock wait ended (0: none yet; counters.h CountDepotWait).
  uint64_t LastDepotWaitEnd(int core) const {
    if (core < 0 || core >= kMaxCores) return 0;
    return Slot(core).counters.depot_wait_end.load(std::memory_order_relaxed);
  }
  uint64_t double_frees() const { return double_frees_.load(std::memory_order_relaxed); }
  uint64_t foreign_frees() const { return foreign_frees_.load(std::memory_order_relaxed); }
  uint64_t swaps_ok() const { return swaps_ok_.load(std::memory_order_relaxed); }
  uint64_t swaps_failed() const { return swaps_failed_.load(std::memory_order_relaxed); }
  // Get calls that reclaimed; requests not served within reclaim_wait; objects the
  // reclaimers moved themselves (workers that served a request count their own flush).
  uint64_t reclaims() const { return reclaims_.load(std::memory_order_relaxed); }
  uint64_t reclaim_timeouts() const { return reclaim_timeouts_.load(std::memory_order_relaxed); }
  uint64_t reclaimed_objects() const { return reclaimed_.load(std::memory_order_relaxed); }

 protected:
  // Checks the config and makes the store (before the derived pool is built).
  static absl::StatusOr<std::unique_ptr<SlabStore>> MakeStore(const PoolConfig& config);
  // `slots` (kMaxCores of them) and `other` belong to the derived pool, which outlives this
  // part's use of them (it calls Shutdown in its destructor); `other` may not be constructed
  // yet (a member of the derived pool): only its address is kept here.
  PoolCore(const PoolConfig& config, std::unique_ptr<SlabStore> store, CoreSlot* const* slots,
           CoreSlot* other);
  // Initialises the slots and publishes the first generation (after the derived pool is
  // built: it owns the slots and compiles the chains).
  void Start(const StrategySpec& initial);
  // Flushes every owned slot and drains the depots (from the derived pool's destructor, while
  // its layers still exist).
  void Shutdown();

  // ---- the layers, as the protocol sees them (control side and reclaim; never per packet)
  // Sets g's get/put: the compiled chain for `chain` (the spec minus a hosted lcache).
  virtual void CompileChain(const StrategySpec& chain, Generation& g) const = 0;
  // Configures every layer of `s` for `chain` (the others hold nothing) and picks the
  // single-object fast path (s.fast; 0 when `inline_ok` is false).
  virtual void ConfigureLayers(CoreSlot& s, const StrategySpec& chain, Depot* depot,
                               bool inline_ok) = 0;
  // Every layer's objects to `to_below`; returns the count.
  virtual uint64_t FlushLayers(CoreSlot& s, FlushSink to_below) = 0;
  // The same by a reclaimer robbing a foreign owner, which may be inside an unmarked
  // single-object free meanwhile (layers with Steal take their objects around it).
  virtual uint64_t StealLayers(CoreSlot& s, FlushSink to_below) = 0;
  // Gives back what the layers borrowed from the generation (after FlushLayers).
  virtual void DetachLayers(CoreSlot& s) = 0;
  // Buffers for the default tunables, at registration.
  virtual void ReserveLayers(CoreSlot& s, bool foreign) = 0;
  virtual void LayerObjects(const CoreSlot& s, LayerGauges& out) const = 0;

  CoreSlot& Slot(int core) const { return *slot_[core]; }
  static bool Owned(const CoreSlot& s) { return s.registered.load(std::memory_order_relaxed); }
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
  static void Enter(CoreSlot& s) {
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
  static void EnterSlow(CoreSlot& s);
  // Reclaims stranded objects (see above), then retries the Get once.
  bool GetAfterReclaim(CoreSlot& s, void** objs, unsigned n, bool count_allocs = true);
  bool QuiesceSlow(CoreSlot& s, uint64_t w);
  void DebugPut(CoreSlot& s, void* const* objs, unsigned n);

  const PoolConfig config_;
  const bool debug_;
  const bool strong_enter_;  // foreign owners fence every operation (no membarrier)
  std::unique_ptr<SlabStore> store_;
  Shared shared_;

 private:
  void Reclaim(CoreSlot& self);
  // Reclaim's steps 1-3 (pool_core.h "No stranded objects"): every layer's objects to the
  // store, quiescent-point workers given `wait`; the ones that did not answer go to
  // `unanswered` (when given). Returns the objects moved by this thread.
  uint64_t EmptyLayers(CoreSlot& self, std::chrono::microseconds wait,
                       std::vector<int>* unanswered);
  // Zeroes every object's stamp word (track.h): before a generation that tracks follows one
  // that does not (nobody stamps then).
  void ClearStamps();
  // A worker's answer to a reclaim request: the host's cache and its layers to the store.
  void ServeReclaim(CoreSlot& s);
  // Writes epoch and pause into the slot's word, keeping a raised reclaim bit.
  void PublishWord(CoreSlot& s, uint64_t epoch);
  // Back to an "other" slot: no layers, no fast path, no RX ports.
  void ResetSlot(CoreSlot& s);
  bool HasForeignOwner() const;
  absl::Status RegisterLocked(int core, const uint32_t (&rings)[kMaxPorts], bool foreign);
  // Flush `s`'s layers into the store. Returns objects moved.
  uint64_t FlushSlot(CoreSlot& s);
  // Flush, then give back what the layers borrowed from their generation.
  uint64_t FlushAndDetach(CoreSlot& s);
  // Flush, then take the current generation under a hazard and configure the layers for it.
  void Adopt(CoreSlot& s);
  void RunAdoptHook(CoreSlot& s, const StrategySpec& next);
  void Configure(CoreSlot& s, const Generation* g);
  // The layers the chain runs for `spec`: without lcache when the host's cache plays it.
  StrategySpec ChainSpec(const StrategySpec& spec) const {
    StrategySpec chain = spec;
    if (HostsLcache(spec)) chain.layers &= ~LayerBit(kHostedLayer);
    return chain;
  }
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
  void MarkHandedOut(void* const* objs, unsigned n);
  uint64_t WordFor(const CoreSlot& s, uint64_t epoch) const;

  CoreSlot* slot_[kMaxCores];
  CoreSlot* const other_;

  std::atomic<const Generation*> current_{nullptr};
  std::atomic<uint64_t> epoch_{0};
  // The control side's locks (Mutex, so clang's -Wthread-safety checks what they guard).
  // Order: control_mu_ before gen_mu_ or info_mu_ (never held together); spare_mu_ alone.
  // generations_ is read under either control_mu_ or gen_mu_ and changed under both (reclaimers
  // take gen_mu_ only): the analysis has no "either" capability, so it carries no annotation.
  mutable Mutex info_mu_;  // current_spec_ (readers never wait for a swap)
  StrategySpec current_spec_ ABSL_GUARDED_BY(info_mu_);
  mutable Mutex control_mu_;                             // serialises control operations
  mutable Mutex gen_mu_;                                 // generations_ (changed under both locks)
  std::deque<std::unique_ptr<Generation>> generations_;  // live ones, oldest first
  Mutex spare_mu_;
  // The last retired generation's depot, all empty.
  std::unique_ptr<Depot> spare_depot_ ABSL_GUARDED_BY(spare_mu_);
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

#endif  // SKBNF_DATAPLANE_POOL_POOL_CORE_H_
