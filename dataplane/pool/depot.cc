// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/pool/depot.h"

#include <sys/mman.h>

#include <mutex>

#include "dataplane/pool/slab_store.h"

namespace skbnf::pool {

namespace {

constexpr size_t kLine = 64;

Magazine* PlaceMagazine(char* mem, uint32_t size) {
  auto* m = new (mem) Magazine;
  m->capacity = size;
  m->objs = reinterpret_cast<void**>(mem + sizeof(Magazine));
  return m;
}

}  // namespace

Depot::Depot(uint32_t magazine_size, uint32_t spares)
    : size_(magazine_size),
      stride_((sizeof(Magazine) + sizeof(void*) * magazine_size + kLine - 1) / kLine * kLine) {
  Reserve(spares);
}

Depot::~Depot() {
  for (const Region& r : regions_) munmap(r.base, r.bytes);
}

Magazine* Depot::NewMagazine() {
  blocks_.emplace_back(new char[stride_]);
  ++made_;
  return PlaceMagazine(blocks_.back().get(), size_);
}

bool Depot::MapMagazines(uint32_t count) {
  const size_t bytes = stride_ * count;
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return false;
  regions_.push_back(Region{base, bytes});
  for (uint32_t i = 0; i < count; ++i) {
    Magazine* m = PlaceMagazine(static_cast<char*>(base) + stride_ * i, size_);
    m->next = empty_;
    empty_ = m;
  }
  made_ += count;
  empty_count_.store(empty_count_.load(std::memory_order_relaxed) + count,
                     std::memory_order_relaxed);
  return true;
}

Magazine* Depot::ExchangeEmptyForFull(Magazine* empty, uint64_t& waited) {
  waited = lock_.LockTimed();
  std::lock_guard<SpinLock> g(lock_, std::adopt_lock);
  Magazine* full = full_;
  if (full == nullptr) return nullptr;
  full_ = full->next;
  objects_.store(objects_.load(std::memory_order_relaxed) - full->rounds,
                 std::memory_order_relaxed);
  empty->next = empty_;
  empty_ = empty;
  empty_count_.store(empty_count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return full;
}

Magazine* Depot::ExchangeFullForEmpty(Magazine* full, uint64_t& waited) {
  waited = lock_.LockTimed();
  std::lock_guard<SpinLock> g(lock_, std::adopt_lock);
  Magazine* empty = empty_;
  if (empty == nullptr) return nullptr;
  empty_ = empty->next;
  empty_count_.store(empty_count_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  full->next = full_;
  full_ = full;
  objects_.store(objects_.load(std::memory_order_relaxed) + full->rounds,
                 std::memory_order_relaxed);
  return empty;
}

void Depot::Reserve(uint32_t total) {
  std::lock_guard<SpinLock> g(lock_);
  if (made_ < total && MapMagazines(total - made_)) return;
  while (made_ < total) {  // the mapping was refused: one heap chunk each, as before
    Magazine* m = NewMagazine();
    m->next = empty_;
    empty_ = m;
    empty_count_.store(empty_count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

Magazine* Depot::TakeEmpty() {
  std::lock_guard<SpinLock> g(lock_);
  Magazine* m = empty_;
  if (m == nullptr) return NewMagazine();
  empty_ = m->next;
  empty_count_.store(empty_count_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  return m;
}

void Depot::ReturnEmpty(Magazine* m) {
  std::lock_guard<SpinLock> g(lock_);
  m->rounds = 0;
  m->next = empty_;
  empty_ = m;
  empty_count_.store(empty_count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

bool Depot::AllEmpty() {
  std::lock_guard<SpinLock> g(lock_);
  return full_ == nullptr && empty_count_.load(std::memory_order_relaxed) == made_;
}

uint64_t Depot::DrainTo(SlabStore& store) {
  std::lock_guard<SpinLock> g(lock_);
  uint64_t n = 0;
  while (full_ != nullptr) {
    Magazine* m = full_;
    full_ = m->next;
    store.Put(m->objs, m->rounds);
    n += m->rounds;
    m->rounds = 0;
    m->next = empty_;
    empty_ = m;
    empty_count_.fetch_add(1, std::memory_order_relaxed);
  }
  objects_.store(0, std::memory_order_relaxed);
  return n;
}

}  // namespace skbnf::pool
