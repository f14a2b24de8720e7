// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/pool/slab_store.h"

#include <algorithm>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace skbnf::pool {
namespace {
bool IsPow2(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }
uintptr_t AlignUp(uintptr_t v, uintptr_t a) { return (v + a - 1) & ~(a - 1); }
}  // namespace

absl::StatusOr<std::unique_ptr<SlabStore>> SlabStore::Create(const SlabStoreConfig& c) {
  if (c.elt_size == 0) return absl::InvalidArgumentError("elt_size must be > 0");
  if (c.handle_offset >= c.elt_size) {
    return absl::InvalidArgumentError("handle_offset must be smaller than elt_size");
  }
  if (c.objs_per_slab == 0 || c.objs_per_slab > (1u << 20)) {
    return absl::InvalidArgumentError("objs_per_slab must be in [1, 1048576]");
  }
  if (!IsPow2(c.cache_line) || c.cache_line > 4096) {
    return absl::InvalidArgumentError("cache_line must be a power of two <= 4096");
  }
  if (!IsPow2(c.slab_align) || c.slab_align < c.cache_line) {
    return absl::InvalidArgumentError("slab_align must be a power of two >= cache_line");
  }
  if (c.stride != 0 && (c.stride < c.elt_size || c.stride % c.cache_line != 0 ||
                        c.stride > SlabStoreConfig::kMaxStride)) {
    return absl::InvalidArgumentError(
        absl::StrCat("stride ", c.stride, " is not a multiple of ", c.cache_line,
                     " from the element size (", c.elt_size, ") to ", SlabStoreConfig::kMaxStride,
                     "; write 0 (packed) or e.g. ", AlignUp(c.elt_size, c.cache_line)));
  }
  if (uint64_t{c.objs_per_slab} * c.step() + c.slab_align > (1ull << 31)) {
    return absl::InvalidArgumentError("a slab would exceed 2 GiB: lower objs_per_slab");
  }
  return std::unique_ptr<SlabStore>(new SlabStore(c));
}

SlabStore::SlabStore(const SlabStoreConfig& c) : config_(c), step_(c.step()) {
  uint64_t used = uint64_t{c.objs_per_slab} * c.step();
  slab_bytes_ = static_cast<uint32_t>(AlignUp(used, c.slab_align));
  uint32_t slack = slab_bytes_ - static_cast<uint32_t>(used);
  colours_ = c.colour ? slack / c.cache_line + 1 : 1;
}

size_t SlabStore::MemSize(uint32_t n) const {
  uint64_t nslabs = (uint64_t{n} + config_.objs_per_slab - 1) / config_.objs_per_slab;
  return nslabs * slab_bytes_ + config_.cache_line;
}

uint32_t SlabStore::num_slabs() const { return num_slabs_.load(std::memory_order_acquire); }
uint64_t SlabStore::index_space() const { return uint64_t{num_slabs()} * config_.objs_per_slab; }

absl::StatusOr<uint32_t> SlabStore::Populate(void* base, size_t len, uint32_t max_objs,
                                             absl::FunctionRef<void(void*)> on_object) {
  uintptr_t start = AlignUp(reinterpret_cast<uintptr_t>(base), config_.cache_line);
  uintptr_t end = reinterpret_cast<uintptr_t>(base) + len;
  if (start >= end) return absl::InvalidArgumentError("chunk too small to align");
  std::lock_guard<SpinLock> guard(lock_);
  for (const Chunk& c : chunks_) {
    uintptr_t cend = c.base + uint64_t{c.nslabs} * slab_bytes_;
    if (start < cend && c.base < end) {
      return absl::InvalidArgumentError("chunk overlaps memory already populated");
    }
  }
  Chunk chunk{start, static_cast<uint32_t>(slabs_.size()), 0};
  uint32_t placed = 0;
  for (uintptr_t sb = start; placed < max_objs && sb < end; sb += slab_bytes_) {
    uint32_t s = static_cast<uint32_t>(slabs_.size());
    uint32_t colour_off = (s % colours_) * config_.cache_line;
    uint64_t room = end - sb;
    if (room <= colour_off) break;
    uint64_t fit = std::min<uint64_t>(slab_bytes_, room);
    if (fit < colour_off + config_.elt_size) break;
    // The last element needs elt_size bytes, each one before it a step.
    uint32_t cap = static_cast<uint32_t>(std::min<uint64_t>(
        (fit - colour_off - config_.elt_size) / step_ + 1, config_.objs_per_slab));
    cap = std::min(cap, max_objs - placed);
    if (cap == 0) break;
    SlabDesc d{sb, colour_off, cap, 0, -1, -1, kEmpty};
    slabs_.push_back(d);
    free_stack_.resize(slabs_.size() * config_.objs_per_slab);
    void** stack = &free_stack_[size_t{s} * config_.objs_per_slab];
    // Push in reverse address order so the first Get returns the lowest address.
    for (uint32_t j = cap; j-- > 0;) {
      void* handle =
          reinterpret_cast<void*>(sb + colour_off + uint64_t{j} * step_ + config_.handle_offset);
      stack[cap - 1 - j] = handle;
    }
    for (uint32_t j = 0; j < cap; ++j) on_object(stack[cap - 1 - j]);
    slabs_[s].free = cap;
    PushList(static_cast<int32_t>(s), kEmpty);
    placed += cap;
    ++chunk.nslabs;
  }
  if (placed == 0) return absl::InvalidArgumentError("chunk holds no whole object");
  chunks_.insert(std::upper_bound(chunks_.begin(), chunks_.end(), chunk,
                                  [](const Chunk& a, const Chunk& b) { return a.base < b.base; }),
                 chunk);
  populated_.fetch_add(placed, std::memory_order_relaxed);
  free_count_.fetch_add(placed, std::memory_order_relaxed);
  num_slabs_.store(static_cast<uint32_t>(slabs_.size()), std::memory_order_release);
  return placed;
}

int32_t SlabStore::SlabOf(const void* handle) const {
  uintptr_t elem = reinterpret_cast<uintptr_t>(handle) - config_.handle_offset;
  // Chunks are few (usually one): find the last chunk starting at or below elem.
  auto it = std::upper_bound(chunks_.begin(), chunks_.end(), elem,
                             [](uintptr_t v, const Chunk& c) { return v < c.base; });
  if (it == chunks_.begin()) return -1;
  const Chunk& c = *(it - 1);
  uint64_t k = (elem - c.base) / slab_bytes_;
  if (k >= c.nslabs) return -1;
  return static_cast<int32_t>(c.first_slab + k);
}

int64_t SlabStore::IndexOf(const void* handle) const {
  int32_t s = SlabOf(handle);
  if (s < 0) return -1;
  const SlabDesc& d = slabs_[s];
  uintptr_t elem = reinterpret_cast<uintptr_t>(handle) - config_.handle_offset;
  if (elem < d.base + d.colour_offset) return -1;
  uint64_t in = elem - d.base - d.colour_offset;
  if (in % step_ != 0) return -1;
  uint64_t j = in / step_;
  if (j >= d.capacity) return -1;
  return int64_t{s} * config_.objs_per_slab + static_cast<int64_t>(j);
}

void SlabStore::Unlink(int32_t s) {
  SlabDesc& d = slabs_[s];
  if (d.prev >= 0)
    slabs_[d.prev].next = d.next;
  else
    heads_[d.list] = d.next;
  if (d.next >= 0) slabs_[d.next].prev = d.prev;
  --list_len_[d.list];
  d.prev = d.next = -1;
}

void SlabStore::PushList(int32_t s, ListId l) {
  SlabDesc& d = slabs_[s];
  d.list = l;
  d.prev = -1;
  d.next = heads_[l];
  if (d.next >= 0) slabs_[d.next].prev = s;
  heads_[l] = s;
  ++list_len_[l];
}

void SlabStore::Relist(int32_t s) {
  SlabDesc& d = slabs_[s];
  ListId want = d.free == 0 ? kFull : (d.free == d.capacity ? kEmpty : kPartial);
  if (want == d.list) return;
  Unlink(s);
  PushList(s, want);
}

unsigned SlabStore::TakeLocked(void** objs, unsigned n) {
  unsigned got = 0;
  while (got < n) {
    int32_t s = heads_[kPartial] >= 0 ? heads_[kPartial] : heads_[kEmpty];
    if (s < 0) break;
    SlabDesc& d = slabs_[s];
    void** stack = &free_stack_[size_t{static_cast<uint32_t>(s)} * config_.objs_per_slab];
    unsigned take = std::min<unsigned>(n - got, d.free);
    for (unsigned i = 0; i < take; ++i) objs[got + i] = stack[--d.free];
    got += take;
    Relist(s);
  }
  free_count_.store(free_count_.load(std::memory_order_relaxed) - got, std::memory_order_relaxed);
  return got;
}

bool SlabStore::Get(void** objs, unsigned n) {
  std::lock_guard<SpinLock> guard(lock_);
  if (free_count_.load(std::memory_order_relaxed) < n) return false;
  TakeLocked(objs, n);
  return true;
}

void SlabStore::Put(void* const* objs, unsigned n) {
  std::lock_guard<SpinLock> guard(lock_);
  for (unsigned i = 0; i < n; ++i) {
    int32_t s = SlabOf(objs[i]);
    SlabDesc& d = slabs_[s];
    free_stack_[size_t{static_cast<uint32_t>(s)} * config_.objs_per_slab + d.free++] = objs[i];
    if (d.free == 1 || d.free == d.capacity) Relist(s);
  }
  free_count_.store(free_count_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

void SlabStore::ForEachObject(absl::FunctionRef<void(uint64_t index, void* handle)> fn) const {
  const uint32_t n = num_slabs_.load(std::memory_order_acquire);
  for (uint32_t s = 0; s < n; ++s) {
    const SlabDesc& d = slabs_[s];
    const uintptr_t first = d.base + d.colour_offset + config_.handle_offset;
    for (uint32_t j = 0; j < d.capacity; ++j) {
      fn(uint64_t{s} * config_.objs_per_slab + j, reinterpret_cast<void*>(first + uint64_t{j} * step_));
    }
  }
}

std::vector<bool> SlabStore::FreeMap() {
  std::vector<void*> free;
  std::vector<uint32_t> per_slab;
  {
    std::lock_guard<SpinLock> guard(lock_);
    per_slab.reserve(slabs_.size());
    free.reserve(free_count_.load(std::memory_order_relaxed));
    for (size_t s = 0; s < slabs_.size(); ++s) {
      void* const* stack = &free_stack_[s * config_.objs_per_slab];
      free.insert(free.end(), stack, stack + slabs_[s].free);
      per_slab.push_back(slabs_[s].free);
    }
  }
  std::vector<bool> map(index_space(), false);
  size_t k = 0;
  for (size_t s = 0; s < per_slab.size(); ++s) {
    const SlabDesc& d = slabs_[s];
    const uintptr_t first = d.base + d.colour_offset + config_.handle_offset;
    for (uint32_t i = 0; i < per_slab[s]; ++i, ++k) {
      const uint64_t j = (reinterpret_cast<uintptr_t>(free[k]) - first) / step_;
      map[s * config_.objs_per_slab + j] = true;
    }
  }
  return map;
}

SlabStore::SlabView SlabStore::Slab(uint32_t i) {
  std::lock_guard<SpinLock> guard(lock_);
  const SlabDesc& d = slabs_.at(i);
  return SlabView{d.base, d.colour_offset, d.capacity, d.free};
}

}  // namespace skbnf::pool
