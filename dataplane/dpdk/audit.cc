// SPDX-License-Identifier: BSD-3-Clause
// The engine's conservation audit (AuditReport in engine.h says what each kind checks).
#include <rte_cycles.h>
#include <rte_mempool.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dataplane/dpdk/engine_state.h"

namespace skbnf::dpdk {

AuditReport Engine::Impl::AuditNow(bool exact) {
  AuditReport r;
  r.exact = exact;
  r.checked = true;
  if (pool != nullptr) {
    r.has_pool = true;
    // First pass: where the pool's objects are, and what the counters say is handed out.
    pool::AuditReport first = pool->Audit(0);
    uint64_t layers = 0;
    for (uint64_t v : first.in_layers) layers += v;
    r.populated = first.populated;
    r.available = first.in_store + layers + first.in_depots;
    r.in_flight = r.populated - std::min(r.populated, r.available);
    // The check: the pool's own conservation equation with in flight = host allocs - host frees
    // from the counters (0 after Stop: every mbuf came back). Independent of `available`.
    // After Stop, what an AF_XDP port's kernel side kept (held_by_pmd, counted from its rings'
    // indices, not from the pool) is the only thing allowed out of the pool.
    r.held_by_pmd = exact ? held_by_pmd_at_stop : 0;
    r.pool = pool->Audit(exact ? r.held_by_pmd : first.handed_out);
    const bool clean = r.pool.double_frees == 0 && r.pool.foreign_frees == 0;
    r.ok = r.pool.ok && clean && (!exact || r.pool.handed_out == r.held_by_pmd);
    r.message = absl::StrCat(
        exact ? "exact (stopped): " : "running (workers parked): in flight by counters ",
        exact ? ""
              : absl::StrCat(r.pool.handed_out, " vs populated - available ", r.in_flight, "; "),
        r.pool.message);
    if (!clean) {
      absl::StrAppend(&r.message, "; double frees ", r.pool.double_frees, ", foreign frees ",
                      r.pool.foreign_frees);
    }
    if (!exact) {
      // Where the in-flight objects are (BufferPlaces, forward.cc), with the workers parked:
      // every core's hands are empty and the places add up to what the counters say is out.
      r.places = PlacesNow();
      std::string wrong;
      for (const BufferPlaces::Core& c : r.places.cores) {
        if (c.in_hands != 0) {
          absl::StrAppend(&wrong, "; core ", c.lcore, " holds ", c.in_hands, " while parked");
        }
      }
      if (r.places.total != static_cast<int64_t>(r.pool.handed_out)) {
        absl::StrAppend(&wrong, "; the places add up to ", r.places.total, ", not ",
                        r.pool.handed_out);
      }
      if (!wrong.empty()) {
        r.ok = false;
        r.message += wrong;
      }
    }
  } else {
    r.populated = mp->populated_size;
    r.available = rte_mempool_avail_count(mp);
    r.in_flight = r.populated - std::min(r.populated, r.available);
    if (exact) {
      r.held_by_pmd = held_by_pmd_at_stop;
      r.ok = r.available + r.held_by_pmd == r.populated;
      r.message = absl::StrCat(
          "exact: ring_mp_mc available ", r.available,
          r.held_by_pmd > 0 ? absl::StrCat(" + held by PMD ", r.held_by_pmd) : std::string(),
          r.ok ? " == " : " != ", "populated ", r.populated);
    } else {
      // DPDK's native pool keeps no alloc/free counters: nothing to check the in-flight figure
      // against while the ports hold mbufs. Reported, not judged.
      r.checked = false;
      r.ok = true;
      r.message = absl::StrCat(
          "unchecked (ring_mp_mc keeps no counters; exact after stop): "
          "available ",
          r.available, " of populated ", r.populated, ", in flight ", r.in_flight);
    }
  }
  if (twin_mp != nullptr) {
    // The native twin queues' pool (EngineConfig::native_twin): DPDK's, no counters, so exact
    // only after stop (every mbuf back, its lcore caches included in the available count).
    const uint64_t tp = twin_mp->populated_size, ta = rte_mempool_avail_count(twin_mp);
    if (exact) {
      r.ok = r.ok && ta == tp;
      absl::StrAppend(&r.message, "; native twin: ring_mp_mc available ", ta,
                      ta == tp ? " == " : " != ", "populated ", tp);
    } else {
      absl::StrAppend(&r.message, "; native twin (unchecked: ring_mp_mc keeps no counters): ",
                      "available ", ta, " of populated ", tp);
    }
  }
  return r;
}

absl::StatusOr<pool::InFlightCensus> Engine::CensusInFlight(std::chrono::microseconds wait) const {
  pool::Pool* p = impl_->pool;
  if (p == nullptr) {
    return absl::FailedPreconditionError(
        "DPDK's native mempool keeps no stamps: run skbnfd on the skbnf pool (--pool-ops skbnf) "
        "with a strategy that has 'track'");
  }
  if (!running()) return absl::FailedPreconditionError("the engine is not running");
  absl::StatusOr<pool::InFlightCensus> c = p->Census(wait);
  if (c.ok()) c->tsc_hz = rte_get_tsc_hz();
  return c;
}

AuditReport Engine::Audit() {
  pool::MutexLock lock(&impl_->control_mu);
  Impl& e = *impl_;
  if (e.stopped) return e.final_audit;
  if (!e.started) return e.AuditNow(false);
  // A quiescent point: park every running worker (each flushes its per-core layers and stops
  // touching the pool and its queues), audit, let them run again.
  std::vector<Worker*> parked;
  absl::Status status;
  for (auto& w : e.workers) {
    if (w->parked.load(std::memory_order_acquire)) continue;
    w->audit_park.store(true, std::memory_order_relaxed);
    status = e.PauseLocked(*w, std::chrono::milliseconds(500));
    if (!status.ok()) {
      w->audit_park.store(false, std::memory_order_relaxed);
      break;
    }
    parked.push_back(w.get());
  }
  AuditReport r;
  if (status.ok()) {
    r = e.AuditNow(false);
  } else {
    r.ok = false;
    r.message = absl::StrCat("audit not taken: ", status.message());
  }
  // A worker the audit parked and could not resume is reported with the audit, never dropped.
  for (Worker* w : parked) {
    if (absl::Status st = e.ResumeLocked(*w, std::chrono::milliseconds(500)); !st.ok()) {
      absl::StrAppend(&r.message, r.message.empty() ? "" : "; ", "after the audit: ", st.message());
    }
    w->audit_park.store(false, std::memory_order_relaxed);
  }
  return r;
}

const AuditReport& Engine::final_audit() const { return impl_->final_audit; }

}  // namespace skbnf::dpdk
