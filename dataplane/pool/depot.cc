// SPDX-License-Identifier: BSD-3-Clause
#include "dataplane/pool/depot.h"

#include <mutex>

#include "dataplane/pool/slab_store.h"

namespace skbnf::pool {

Depot::Depot(uint32_t magazine_size, uint32_t spares) : size_(magazine_size) { Reserve(spares); }

Depot::~Depot() = default;

Magazine* Depot::NewMagazine() {
  size_t bytes = sizeof(Magazine) + sizeof(void*) * size_;
  blocks_.emplace_back(new char[bytes]);
  char* mem = blocks_.back().get();
  auto* m = new (mem) Magazine;
  m->capacity = size_;
  m->objs = reinterpret_cast<void**>(mem + sizeof(Magazine));
  return m;
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
  while (blocks_.size() < total) {
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
  return full_ == nullptr && empty_count_.load(std::memory_order_relaxed) == blocks_.size();
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
