// SPDX-License-Identifier: BSD-3-Clause
// SlabStore: the bottom of every strategy, and the owner of every object for the pool's life.
//
// The host hands the store memory chunks (DPDK's populate; aligned heap memory in tests and
// benchmarks). The store carves each chunk into slabs of `objs_per_slab` elements. A slab's
// byte size is `objs_per_slab * elt_size` (with a stride: `* stride`) rounded up to
// `slab_align`; the difference is the slab's slack. With colouring on, slab i starts its first
// element at
//
//     (i mod colours) * cache_line,   colours = slack / cache_line + 1
//
// which is Bonwick's colouring (the 1998 skb slab): consecutive slabs put their objects on
// different cache-line offsets, so same-index objects of different slabs do not all map to the
// same cache sets. Colouring is a layout decision and is fixed when the pool is populated.
//
// Slabs sit on three lists, as in Linux mm/slab.c:
//   partial  some elements free, some handed out    <- allocation takes from here first
//   full     every element handed out
//   empty    every element free                     <- then from here
// Each slab keeps a LIFO stack of its free elements *outside* the objects (the store never
// writes into an object: DPDK mbufs keep their initialised fields across free/alloc).
//
// Stride. By default a slab's elements are packed, `elt_size` apart. A host may ask for a
// larger `stride` (SetStride): element j of a slab then starts at colour_offset + j * stride, and
// the bytes between one element's end and the next one's start are never touched. This is a
// layout experiment, not a tuning: with stride 4,096 every object starts its own 4 KiB page at
// the same page offset, which is how DPDK's own mempool lays out pktmbufs on --no-huge (an
// element > 2 KiB may not cross a page there: rte_mempool_op_populate_helper), so skbnf's store
// and DPDK's pool can be compared at equal layout (issue 23, skbnfd --store-stride). The stride
// is a multiple of the cache line (objects stay line-aligned) and at most kMaxStride.
//
// One lock guards the store. The store's callers (layers above it) count lock acquisitions.
// Populate before the pool is used concurrently: lookups by address read the chunk table
// without the lock.
#ifndef SKBNF_DATAPLANE_POOL_SLAB_STORE_H_
#define SKBNF_DATAPLANE_POOL_SLAB_STORE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "dataplane/pool/spinlock.h"

namespace skbnf::pool {

struct SlabStoreConfig {
  uint32_t elt_size = 0;        // bytes per element
  uint32_t stride = 0;          // bytes from one element's start to the next; 0: elt_size
  uint32_t handle_offset = 0;   // handle = element start + handle_offset (DPDK: header size)
  uint32_t objs_per_slab = 64;  // elements per slab
  uint32_t slab_align = 4096;   // slab byte size is rounded up to this (power of two)
  uint32_t cache_line = 64;     // colour step (power of two)
  bool colour = false;

  static constexpr uint32_t kMaxStride = 64 * 1024;
  // The distance between neighbouring elements of a slab.
  uint32_t step() const { return stride != 0 ? stride : elt_size; }
  // Sets `stride` and, for a host that sizes its slabs in bytes, objs_per_slab: as many elements
  // `step()` apart as fit in `slab_bytes` (at least one).
  void SetStride(uint32_t new_stride, uint32_t slab_bytes) {
    stride = new_stride;
    objs_per_slab = step() >= slab_bytes ? 1 : slab_bytes / step();
  }
};

class SlabStore {
  friend struct SlabStoreTestPeer;  // tests/unit/test_peers.h: what only tests read

 public:
  // Validates the configuration.
  static absl::StatusOr<std::unique_ptr<SlabStore>> Create(const SlabStoreConfig& config);

  SlabStore(const SlabStore&) = delete;
  SlabStore& operator=(const SlabStore&) = delete;

  // Bytes of memory a host must hand to Populate for `n` objects in one chunk.
  size_t MemSize(uint32_t n) const;

  // Lays out at most `max_objs` elements in [base, base + len). Calls on_object(handle) for each
  // element, in address order, before it becomes allocatable. Returns the number laid out.
  absl::StatusOr<uint32_t> Populate(void* base, size_t len, uint32_t max_objs,
                                    absl::FunctionRef<void(void*)> on_object);

  // Takes exactly n objects, or none (returns false).
  bool Get(void** objs, unsigned n);
  // Returns objects. Each must be a handle handed out by this store (the pool's debug switch
  // filters foreign and double-freed objects before they get here).
  void Put(void* const* objs, unsigned n);

  // Global index of the object whose handle is `handle`, or -1 if it is not one.
  int64_t IndexOf(const void* handle) const;

  uint64_t populated() const { return populated_.load(std::memory_order_relaxed); }
  uint64_t free_count() const { return free_count_.load(std::memory_order_relaxed); }
  uint32_t colours() const { return colours_; }
  uint32_t slab_bytes() const { return slab_bytes_; }
  uint32_t num_slabs() const;
  // Max global index + 1 (objs_per_slab * num_slabs).
  uint64_t index_space() const;
  const SlabStoreConfig& config() const { return config_; }

  // The census's view (track.h): calls fn(index, handle) for every object, in index order
  // (after Populate: the layout is fixed), and FreeMap marks the objects in the store at one
  // moment (read under the lock, which is held for a copy of the free stacks only).
  void ForEachObject(absl::FunctionRef<void(uint64_t index, void* handle)> fn) const;
  std::vector<bool> FreeMap();

  struct SlabView {
    uintptr_t base;          // start of the slab's memory
    uint32_t colour_offset;  // bytes from base to the first element
    uint32_t capacity;       // elements in this slab
    uint32_t free;           // elements currently in the store
  };
  SlabView Slab(uint32_t i);

 private:
  explicit SlabStore(const SlabStoreConfig& config);

  struct Chunk {
    uintptr_t base;  // aligned start of the first slab
    uint32_t first_slab;
    uint32_t nslabs;
  };
  enum ListId : uint8_t { kPartial = 0, kFull = 1, kEmpty = 2 };
  struct SlabDesc {
    uintptr_t base;
    uint32_t colour_offset;
    uint32_t capacity;
    uint32_t free;
    int32_t prev, next;
    ListId list;
  };

  int32_t SlabOf(const void* handle) const;  // -1 if not inside any slab
  void Unlink(int32_t s);
  void PushList(int32_t s, ListId l);
  void Relist(int32_t s);  // moves s to the list its free count calls for
  unsigned TakeLocked(void** objs, unsigned n);

  const SlabStoreConfig config_;
  const uint32_t step_;  // config_.step(): the distance between neighbouring elements
  uint32_t slab_bytes_ = 0;
  uint32_t colours_ = 1;

  SpinLock lock_;
  std::vector<Chunk> chunks_;  // sorted by base
  std::vector<SlabDesc> slabs_;
  std::vector<void*> free_stack_;  // slab s owns [s * objs_per_slab, +capacity)
  int32_t heads_[3] = {-1, -1, -1};
  uint32_t list_len_[3] = {0, 0, 0};
  std::atomic<uint64_t> populated_{0};
  std::atomic<uint64_t> free_count_{0};
  std::atomic<uint32_t> num_slabs_{0};
};

}  // namespace skbnf::pool

#endif  // SKBNF_DATAPLANE_POOL_SLAB_STORE_H_
