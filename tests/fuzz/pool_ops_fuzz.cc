// SPDX-License-Identifier: BSD-3-Clause
// Fuzz target: the buffer core (dataplane/pool/pool.h) driven by a small interpreter.
//
// The input is a program. Its first bytes configure the pool (debug switch, slab colouring,
// foreign owners fenced by membarrier(2) or per operation, 16..256 objects, the initial
// strategy); every following op takes 1-3 bytes:
//   Get / Put          n objects on worker core 0, worker core 1 or kNoCore (another thread)
//   SetRxPort          -1, 0, 1 or 2 on a worker (its RX ports are 0 and 1)
//   Swap               to a strategy built from the input (any layer mask, small tunables):
//                      from a control thread while this thread, the workers' one thread,
//                      keeps reaching their quiescent points; directly when none runs
//   Pause / Resume     a worker, the same way (a parked worker is switched on its behalf)
//   Register / Unregister a worker (from this thread: the worker itself)
//   bad Put            (debug pools) a double free or a foreign pointer: counted and dropped
//   DrainDepots
//   Register / Unregister a foreign owner (core 2: Get/Put marked, no quiescent point;
//                      reclaimers rob it; swaps are refused while it is registered)
// Both workers are driven by this one thread, so a Get on one of them cannot wait for the
// other to serve its reclaim request (reclaim_wait is 1 us, as in tests/unit/model_test.cc).
// Invariants, checked after every op:
//   - no object is handed out twice, and every object handed out is one of the pool's;
//   - Audit(held) balances exactly and its counters say `held` objects are handed out;
//   - a Get fails only when the pool really has too few objects reachable to the caller: the
//     free ones minus those in the other running worker's layers (it cannot answer in time);
//   - after a swap or a pause the worker's layers are empty; with no worker left everything
//     not held is in the store;
//   - bad Puts are counted exactly and change nothing else;
// and at the end, with everything put back and the workers gone, all objects are in the store.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "dataplane/pool/pool.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/unit/test_peers.h"

namespace skbnf::pool {
namespace {

constexpr int kWorkers = 2;  // cores 0 and 1
constexpr int kForeign = 2;  // a foreign owner (a DPDK app's lcore: no quiescent point)
constexpr int kMaxOps = 256;
constexpr unsigned kMaxBurst = 48;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Reads the program; 0 once it is exhausted.
class Program {
 public:
  Program(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  uint8_t Next() { return pos_ < size_ ? data_[pos_++] : 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// One control thread for the whole run (a thread per swap would dominate the cost of an input).
// Run() hands it a task and keeps calling `quiesce` on this thread until the task is done.
class ControlThread {
 public:
  static ControlThread& Get() {
    static ControlThread* t = new ControlThread();  // lives for the process
    return *t;
  }
  void Run(std::function<void()> task, const std::function<void()>& quiesce) {
    {
      std::lock_guard<std::mutex> l(mu_);
      task_ = std::move(task);
      done_.store(false, std::memory_order_relaxed);
    }
    cv_.notify_one();
    while (!done_.load(std::memory_order_acquire)) {
      quiesce();
      std::this_thread::yield();  // the machine may have fewer free cores than threads here
    }
  }

 private:
  ControlThread() : thread_([this] { Loop(); }) { thread_.detach(); }
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [this] { return task_ != nullptr; });
        task = std::move(task_);
        task_ = nullptr;
      }
      task();
      done_.store(true, std::memory_order_release);
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;
  std::atomic<bool> done_{true};
  std::thread thread_;
};

enum class WorkerState { kGone, kRunning, kParked };

StrategySpec SpecFrom(Program& p) {
  const uint8_t b = p.Next();
  StrategySpec s;
  s.layers = b & 0xf;
  s.prefetch = (b & 0x10) != 0;
  if (s.Has(Layer::kLcache)) s.Tunable(Layer::kLcache) = 1 + p.Next() % 32;
  if (s.Has(Layer::kRecycle)) s.Tunable(Layer::kRecycle) = p.Next() % 33;  // 0: the port's ring
  if (s.Has(Layer::kHeadPool)) s.Tunable(Layer::kHeadPool) = 1 + p.Next() % 64;
  if (s.Has(Layer::kMagazine)) s.Tunable(Layer::kMagazine) = 1 + p.Next() % 16;
  return s;
}

// A burst size in [1, max]: half of the bytes give 1..4, so that the single-object fast paths
// (n == 1) and the bulk paths are both common.
unsigned Burst(uint8_t b, size_t max) {
  const size_t span = b < 128 ? std::min<size_t>(max, 4) : max;
  return 1 + static_cast<unsigned>(b % span);
}

uint64_t LayerTotal(const LayerGauges& g) {
  uint64_t n = 0;
  for (uint64_t v : g.objects) n += v;
  return n;
}

class Interpreter {
 public:
  Interpreter(const uint8_t* data, size_t size) : prog_(data, size) {}

  void Run() {
    if (!Setup()) return;
    for (int op = 0; op < kMaxOps && !prog_.done(); ++op) {
      op_ = op;
      QuiesceAll();
      Step();
      CheckAudit();
    }
    Finish();
  }

 private:
  bool Setup() {
    const uint8_t cfg = prog_.Next();
    n_objects_ = 16u * (1 + prog_.Next() % 16);
    PoolConfig c;
    c.store.elt_size = 64;
    c.store.objs_per_slab = 8;
    c.store.colour = (cfg & 2) != 0;
    c.debug = (cfg & 1) != 0;
    c.asymmetric_fence = (cfg & 4) == 0;  // foreign owners: membarrier(2), or a fence per op
    c.quiesce_timeout = std::chrono::seconds(10);  // only a hang would reach it
    c.reclaim_wait = std::chrono::microseconds(1);
    c.classify = [](void*, void* const* objs, unsigned n, int16_t* ports) {
      for (unsigned i = 0; i < n; ++i) std::memcpy(&ports[i], objs[i], sizeof(int16_t));
    };
    auto pool = Pool::Create(c, SpecFrom(prog_));
    FUZZ_CHECK(pool.ok(), "Create: %s", pool.status().ToString().c_str());
    pool_ = std::move(*pool);
    const size_t bytes = pool_->MemSize(n_objects_);
    mem_.reset(std::aligned_alloc(4096, (bytes + 4095) & ~size_t{4095}));
    auto placed = pool_->Populate(mem_.get(), bytes, n_objects_, [&](void* obj) {
      all_.push_back(obj);
      Tag(obj, -1);
    });
    FUZZ_CHECK(placed.ok() && *placed == n_objects_, "Populate: %s",
               placed.ok() ? "short" : placed.status().ToString().c_str());
    Register(0);
    return true;
  }

  static void Tag(void* obj, int16_t port) { std::memcpy(obj, &port, sizeof(port)); }

  void Register(int core) {
    absl::Status s =
        pool_->RegisterWorker(core, {{.port = 0, .ring_size = 8}, {.port = 1, .ring_size = 16}});
    FUZZ_CHECK(s.ok(), "RegisterWorker(%d): %s", core, s.ToString().c_str());
    state_[core] = WorkerState::kRunning;
  }

  void QuiesceAll() {
    for (int c = 0; c < kWorkers; ++c) {
      if (state_[c] == WorkerState::kGone) continue;
      const bool runs = pool_->Quiesce(c);
      FUZZ_CHECK(runs == (state_[c] == WorkerState::kRunning), "op %d: core %d Quiesce says %d",
                 op_, c, runs);
    }
  }

  // A core the op may use from this thread: a running worker, or kNoCore.
  int PickCore(uint8_t b) {
    const int c = b % 3;
    if (c == kWorkers || state_[c] != WorkerState::kRunning) return kNoCore;
    return c;
  }

  void Step() {
    const uint8_t op = prog_.Next() % 20;
    if (op < 6) {
      DoGet(PickCore(prog_.Next()), Burst(prog_.Next(), kMaxBurst));
    } else if (op < 11) {
      DoPut(PickCore(prog_.Next()));
    } else if (op == 11) {
      const uint8_t b = prog_.Next();
      const int c = b & 1;
      // -1 (none), its RX ports 0 and 1, or port 2 (valid, but not one of its RX ports).
      if (state_[c] == WorkerState::kRunning) pool_->SetRxPort(c, static_cast<int>(b >> 1) % 4 - 1);
    } else if (op == 12) {
      DoSwap(SpecFrom(prog_));
    } else if (op == 13) {
      DoPauseResume(prog_.Next() & 1);
    } else if (op == 14) {
      const int c = prog_.Next() & 1;
      if (state_[c] == WorkerState::kGone) {
        Register(c);
      } else {
        Unregister(c);
      }
    } else if (op == 15) {
      if (pool_->debug()) {
        DoBadPut(prog_.Next());
      } else {
        PoolCoreTestPeer::DrainDepots(*pool_);
      }
    } else if (op == 16) {
      ToggleForeign();
    } else if (!foreign_) {
      return;
    } else if (op < 19) {
      DoGet(kForeign, Burst(prog_.Next(), kMaxBurst));
    } else {
      DoPut(kForeign);
    }
  }

  // The foreign owner is this thread too (RegisterForeignCore is called from the core's own
  // thread); it is never inside an operation when a reclaimer robs it.
  void ToggleForeign() {
    absl::Status s;
    if (!foreign_) {
      s = pool_->RegisterForeignCore(kForeign);
      FUZZ_CHECK(s.ok(), "op %d: RegisterForeignCore: %s", op_, s.ToString().c_str());
      foreign_ = true;
    } else {
      s = pool_->UnregisterWorker(kForeign);
      FUZZ_CHECK(s.ok(), "op %d: Unregister(foreign): %s", op_, s.ToString().c_str());
      foreign_ = false;
      CheckAllBackIfNoOwner();
    }
  }

  void DoGet(int core, unsigned n) {
    std::vector<void*> got(n);
    const bool ok = pool_->Get(core, got.data(), n);  // (a foreign owner's slot: marked)
    if (ok) {
      for (void* o : got) {
        FUZZ_CHECK(pool_->store().IndexOf(o) >= 0, "op %d: Get returned a foreign %p", op_, o);
        FUZZ_CHECK(held_set_.insert(o).second, "op %d: %p handed out twice (%s)", op_, o,
                   pool_->strategy().ToString().c_str());
        // The port the host's recycle check will name for it: none, an RX port of the
        // workers, another port, the last valid port, out of range.
        static constexpr int16_t kTags[] = {-1, 0, 1, 2, kMaxPorts - 1, kMaxPorts, -2};
        Tag(o, kTags[prog_.Next() % std::size(kTags)]);
        held_.push_back(o);
      }
      return;
    }
    if (core == kNoCore && Running() > 0) return;  // the workers serve it at their next Quiesce
    // Reachable to the caller: every free object except those in another running worker's
    // layers (it cannot answer within reclaim_wait: this thread is that worker too). The
    // foreign owner's layers are reachable: a reclaimer robs them.
    uint64_t stranded = 0;
    for (int c = 0; c < kWorkers; ++c) {
      if (c != core && state_[c] == WorkerState::kRunning) {
        stranded += LayerTotal(pool_->CoreGauges(c));
      }
    }
    const uint64_t reachable = n_objects_ - held_.size() - stranded;
    FUZZ_CHECK(reachable < n, "op %d: Get(%d, %u) failed with %llu reachable (%s)", op_, core, n,
               static_cast<unsigned long long>(reachable), pool_->strategy().ToString().c_str());
  }

  void DoPut(int core) {
    if (held_.empty()) return;
    const unsigned n = Burst(prog_.Next(), std::min<size_t>(held_.size(), kMaxBurst));
    std::vector<void*> out;
    for (unsigned i = 0; i < n; ++i) {
      const size_t k = prog_.Next() % held_.size();
      out.push_back(held_[k]);
      held_set_.erase(held_[k]);
      held_[k] = held_.back();
      held_.pop_back();
    }
    if (core == kForeign) {
      pool_->Put(core, out.data(), n);
    } else {
      pool_->Put(core, out.data(), n);
    }
  }

  // Runs `task` on the control thread while this thread keeps the running workers quiescing.
  void OnControl(std::function<void()> task) {
    if (Running() == 0) {
      task();
      return;
    }
    ControlThread::Get().Run(std::move(task), [this] {
      for (int c = 0; c < kWorkers; ++c) {
        if (state_[c] != WorkerState::kGone) pool_->Quiesce(c);
      }
    });
  }

  void DoSwap(const StrategySpec& next) {
    SwapReport r;
    if (foreign_) {
      // A foreign owner fixes the strategy: refused, nothing changed.
      const StrategySpec before = pool_->strategy();
      const uint64_t epoch = pool_->epoch();
      OnControl([&] { r = pool_->Swap(next); });
      FUZZ_CHECK(r.status.code() == absl::StatusCode::kFailedPrecondition,
                 "op %d: Swap with a foreign owner: %s", op_, r.status.ToString().c_str());
      FUZZ_CHECK(pool_->strategy() == before && pool_->epoch() == epoch,
                 "op %d: a refused swap changed the strategy", op_);
      return;
    }
    OnControl([&] { r = pool_->Swap(next); });
    FUZZ_CHECK(r.status.ok(), "op %d: Swap to %s: %s", op_, next.ToString().c_str(),
               r.status.ToString().c_str());
    FUZZ_CHECK(pool_->strategy() == next, "op %d: strategy %s after a swap to %s", op_,
               pool_->strategy().ToString().c_str(), next.ToString().c_str());
    for (const CoreSwapResult& cr : r.cores) {
      FUZZ_CHECK(cr.acknowledged, "op %d: core %d did not acknowledge", op_, cr.core);
      FUZZ_CHECK(cr.on_behalf == (state_[cr.core] == WorkerState::kParked),
                 "op %d: core %d on_behalf %d", op_, cr.core, cr.on_behalf);
    }
    CheckLayersEmpty("swap");
  }

  void DoPauseResume(int core) {
    if (state_[core] == WorkerState::kGone) return;
    absl::Status s;
    if (state_[core] == WorkerState::kRunning) {
      OnControl([&] { s = pool_->PauseWorker(core); });
      FUZZ_CHECK(s.ok() && pool_->IsPaused(core), "op %d: Pause(%d): %s", op_, core,
                 s.ToString().c_str());
      state_[core] = WorkerState::kParked;
      FUZZ_CHECK(LayerTotal(pool_->CoreGauges(core)) == 0, "op %d: parked core %d holds objects",
                 op_, core);
    } else {
      // The parked worker must itself reach its quiescent point to leave: it counts as running
      // for OnControl from the moment Resume is asked.
      state_[core] = WorkerState::kRunning;
      OnControl([&] { s = pool_->ResumeWorker(core); });
      FUZZ_CHECK(s.ok() && !pool_->IsPaused(core), "op %d: Resume(%d): %s", op_, core,
                 s.ToString().c_str());
    }
  }

  void Unregister(int core) {
    absl::Status s = pool_->UnregisterWorker(core);
    FUZZ_CHECK(s.ok(), "op %d: Unregister(%d): %s", op_, core, s.ToString().c_str());
    state_[core] = WorkerState::kGone;
    CheckAllBackIfNoOwner();
  }

  void CheckAllBackIfNoOwner() {
    if (state_[0] == WorkerState::kGone && state_[1] == WorkerState::kGone && !foreign_) {
      FUZZ_CHECK(pool_->in_store() + held_.size() == n_objects_,
                 "op %d: no worker left, but %llu in store + %zu held != %u", op_,
                 static_cast<unsigned long long>(pool_->in_store()), held_.size(), n_objects_);
    }
  }

  void DoBadPut(uint8_t b) {
    void* bad = nullptr;
    int16_t local = 0;
    if (b & 1) {
      bad = &local;  // not the pool's
      ++expect_foreign_;
    } else {
      // An object the host does not hold: already in the pool.
      for (size_t i = 0; i < all_.size(); ++i) {
        void* o = all_[(b + i) % all_.size()];
        if (held_set_.count(o) == 0) {
          bad = o;
          break;
        }
      }
      if (bad == nullptr) return;
      ++expect_double_;
    }
    pool_->Put(PickCore(b >> 1), &bad, 1);
    FUZZ_CHECK(pool_->double_frees() == expect_double_ && pool_->foreign_frees() == expect_foreign_,
               "op %d: bad puts counted %llu/%llu, expected %llu/%llu", op_,
               static_cast<unsigned long long>(pool_->double_frees()),
               static_cast<unsigned long long>(pool_->foreign_frees()),
               static_cast<unsigned long long>(expect_double_),
               static_cast<unsigned long long>(expect_foreign_));
  }

  int Running() const {
    int n = 0;
    for (WorkerState s : state_) n += s == WorkerState::kRunning;
    return n;
  }

  void CheckLayersEmpty(const char* after) {
    for (int c = 0; c < kWorkers; ++c) {
      FUZZ_CHECK(LayerTotal(pool_->CoreGauges(c)) == 0,
                 "op %d: core %d's layers hold %llu after %s", op_, c,
                 static_cast<unsigned long long>(LayerTotal(pool_->CoreGauges(c))), after);
    }
  }

  void CheckAudit() {
    AuditReport a = pool_->Audit(held_.size());
    FUZZ_CHECK(a.ok, "op %d (%s): %s", op_, pool_->strategy().ToString().c_str(),
               a.message.c_str());
    FUZZ_CHECK(a.handed_out == held_.size(), "op %d: counters say %llu handed out, host holds %zu",
               op_, static_cast<unsigned long long>(a.handed_out), held_.size());
  }

  void Finish() {
    op_ = kMaxOps;
    for (int c = 0; c < kWorkers; ++c) {
      if (state_[c] == WorkerState::kParked) DoPauseResume(c);
    }
    QuiesceAll();
    const int core = PickCore(0);
    pool_->Put(core, held_.data(), static_cast<unsigned>(held_.size()));
    held_.clear();
    held_set_.clear();
    CheckAudit();
    for (int c = 0; c < kWorkers; ++c) {
      if (state_[c] != WorkerState::kGone) Unregister(c);
    }
    if (foreign_) ToggleForeign();
    FUZZ_CHECK(pool_->in_store() == n_objects_, "end: %llu of %u in the store",
               static_cast<unsigned long long>(pool_->in_store()), n_objects_);
    FUZZ_CHECK(pool_->double_frees() == expect_double_ && pool_->foreign_frees() == expect_foreign_,
               "end: bad puts miscounted");
  }

  Program prog_;
  uint32_t n_objects_ = 0;
  std::unique_ptr<void, FreeDeleter> mem_;
  std::unique_ptr<Pool> pool_;  // destroyed before mem_
  std::vector<void*> all_;
  std::vector<void*> held_;
  std::unordered_set<void*> held_set_;
  WorkerState state_[kWorkers] = {WorkerState::kGone, WorkerState::kGone};
  bool foreign_ = false;  // core kForeign is a registered foreign owner
  uint64_t expect_double_ = 0;
  uint64_t expect_foreign_ = 0;
  int op_ = -1;
};

}  // namespace
}  // namespace skbnf::pool

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  skbnf::pool::Interpreter(data, size).Run();
  return 0;
}
